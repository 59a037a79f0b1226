import { describe, expect, test } from 'vitest';
import { ClosedError, PreconditionFailedError } from '../../src/errors.js';
import type { Message } from '../../src/message/message.js';
import { normalizeMessage } from '../../src/message/normalize.js';
import { type ConsumerHost, Subscription } from '../../src/queues/consumer.js';

/** A host that records what its consumer did, delivering from a list while capacity allows. */
function recordingHost() {
  const events: string[] = [];
  const pending: string[] = [];
  const host: ConsumerHost<string> & { pump(sub: Subscription<string>): void } = {
    onAck: (_c, entry) => events.push(`ack ${entry}`),
    onReject: (_c, entry, requeue) => events.push(`reject ${entry} requeue=${requeue}`),
    onCapacity: (c) => {
      events.push('capacity');
      host.pump(c);
    },
    onCancel: () => events.push('cancel'),
    onCallbackError: (_c, error) => events.push(`error ${(error as Error).message}`),
    pump(sub) {
      while (sub.capacity > 0 && pending.length > 0) {
        const entry = pending.shift()!;
        sub.deliver(entry, normalizeMessage(entry, undefined, '', 'q'), false);
      }
    },
  };
  return { host, events, pending };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('a subscription', () => {
  test('gets a server-style tag when none is given', () => {
    const { host } = recordingHost();
    expect(new Subscription(host, 'q', {}).consumerTag).toMatch(/^amq\.ctag-[\w-]{22}$/);
    expect(new Subscription(host, 'q', { tag: 'mine' }).consumerTag).toBe('mine');
  });

  test('server-style tags do not repeat', () => {
    const { host } = recordingHost();
    const tags = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const tag = new Subscription(host, 'q', {}).consumerTag;
      expect(tag).toMatch(/^amq\.ctag-[\w-]{22}$/);
      tags.add(tag);
    }
    expect(tags.size).toBe(1000);
  });

  test('pause holds deliveries back whatever the prefetch; resume lets them flow', () => {
    const { host, pending } = recordingHost();
    const got: string[] = [];
    const sub = new Subscription(host, 'q', { paused: true }, (m) => {
      got.push(m.bodyString());
    });
    pending.push('a', 'b');
    host.pump(sub);
    expect(sub.capacity).toBe(0);
    expect(got).toEqual([]);
    sub.resume();
    expect(got).toEqual(['a', 'b']);
    sub.pause();
    pending.push('c');
    host.pump(sub);
    expect(got).toEqual(['a', 'b']);
    sub.resume();
    expect(got).toEqual(['a', 'b', 'c']);
  });

  test('refuses a prefetch that is not an integer 0..65535', () => {
    const { host } = recordingHost();
    expect(() => new Subscription(host, 'q', { prefetch: -1 })).toThrow(RangeError);
    expect(() => new Subscription(host, 'q', { prefetch: 1.5 })).toThrow(RangeError);
    expect(() => new Subscription(host, 'q', { prefetch: 70000 })).toThrow(RangeError);
  });

  test('acks after a synchronous callback returns, and asks for more', () => {
    const { host, events, pending } = recordingHost();
    const seen: string[] = [];
    const sub = new Subscription<string>(host, 'q', { prefetch: 1 }, (m) => {
      seen.push(m.bodyString());
    });
    pending.push('a', 'b', 'c');
    host.pump(sub);
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(events.filter((e) => e.startsWith('ack'))).toEqual(['ack a', 'ack b', 'ack c']);
  });

  test('acks after an async callback resolves and requeues when it throws', async () => {
    const { host, events, pending } = recordingHost();
    const sub = new Subscription<string>(host, 'q', {}, async (m) => {
      await flush();
      if (m.bodyString() === 'bad') throw new Error('boom');
    });
    pending.push('good', 'bad');
    host.pump(sub);
    await flush();
    await flush();
    expect(events).toContain('ack good');
    expect(events).toContain('reject bad requeue=true');
  });

  test('requeueOnNack: false drops a message whose callback threw', async () => {
    const { host, events, pending } = recordingHost();
    const sub = new Subscription<string>(host, 'q', { requeueOnNack: false }, () => {
      throw new Error('boom');
    });
    pending.push('x');
    host.pump(sub);
    await flush();
    expect(events).toContain('reject x requeue=false');
  });

  test('reports a callback that throws or rejects, after settling it, in every ack mode', async () => {
    for (const params of [{}, { noAck: true }, { manualAck: true }, { requeueOnNack: false }]) {
      const { host, events, pending } = recordingHost();
      const sub = new Subscription<string>(host, 'q', params, (m) => {
        if (m.bodyString() === 'sync') throw new Error('sync boom');
        return Promise.reject(new Error('async boom'));
      });
      pending.push('sync', 'async');
      host.pump(sub);
      await flush();
      const reported = events.filter((e) => e.startsWith('error'));
      expect(reported, JSON.stringify(params)).toEqual(['error sync boom', 'error async boom']);
      if (!sub.noAck && params.manualAck !== true) {
        // The nack comes first: the handler sees the queue as it is after it.
        const nack = events.findIndex((e) => e.startsWith('reject sync'));
        expect(nack).toBeGreaterThanOrEqual(0);
        expect(events.indexOf('error sync boom')).toBeGreaterThan(nack);
      }
    }
  });

  test('manualAck leaves settling to the callback', async () => {
    const { host, events, pending } = recordingHost();
    const held: Message[] = [];
    const sub = new Subscription<string>(host, 'q', { manualAck: true, prefetch: 2 }, (m) => {
      held.push(m);
    });
    pending.push('a', 'b', 'c');
    host.pump(sub);
    expect(held.map((m) => m.bodyString())).toEqual(['a', 'b']);
    expect(events.some((e) => e.startsWith('ack'))).toBe(false);
    await held[1]!.ack(true);
    expect(events.filter((e) => e.startsWith('ack'))).toEqual(['ack a', 'ack b']);
    expect(held.map((m) => m.bodyString())).toEqual(['a', 'b', 'c']);
  });

  test('acking an unknown or already settled tag fails with 406', async () => {
    const { host, pending } = recordingHost();
    const held: Message[] = [];
    const sub = new Subscription<string>(host, 'q', { manualAck: true }, (m) => {
      held.push(m);
    });
    pending.push('a');
    host.pump(sub);
    await held[0]!.ack();
    await expect(held[0]!.ack()).rejects.toThrow(PreconditionFailedError);
    await expect(sub.ack(99)).rejects.toThrow('PRECONDITION_FAILED - unknown delivery tag 99');
  });

  test('nack with multiple settles every earlier delivery in order', async () => {
    const { host, events, pending } = recordingHost();
    const held: Message[] = [];
    const sub = new Subscription<string>(host, 'q', { manualAck: true }, (m) => {
      held.push(m);
    });
    pending.push('a', 'b', 'c');
    host.pump(sub);
    await held[1]!.nack(true, true);
    expect(events.filter((e) => e.startsWith('reject'))).toEqual([
      'reject a requeue=true',
      'reject b requeue=true',
    ]);
    await held[2]!.reject();
    expect(events).toContain('reject c requeue=false');
  });

  test('a message acked on return cannot be acked again, from its callback or later', async () => {
    const { host, events, pending } = recordingHost();
    const held: Message[] = [];
    const sub = new Subscription<string>(host, 'q', {}, (m) => {
      held.push(m);
    });
    pending.push('a', 'b');
    host.pump(sub);
    expect(events.filter((e) => e.startsWith('ack'))).toEqual(['ack a', 'ack b']);
    expect(sub.unackedCount).toBe(0);
    expect(sub.capacity).toBe(Number.POSITIVE_INFINITY);
    await expect(held[0]!.ack()).rejects.toThrow('unknown delivery tag 1');
    await expect(sub.ack(2, true)).rejects.toThrow('unknown delivery tag 2');
    await expect(sub.ack(0, false)).rejects.toThrow('unknown delivery tag 0');
    expect(sub.unackedCount).toBe(0);
  });

  test('a callback settling with multiple covers its own delivery and the earlier ones', async () => {
    const { host, events, pending } = recordingHost();
    const sub = new Subscription<string>(host, 'q', { manualAck: true, prefetch: 3 }, (m) => {
      if (m.bodyString() === 'c') void m.nack(false, true);
    });
    pending.push('a', 'b', 'c', 'd');
    host.pump(sub);
    expect(events.filter((e) => e.startsWith('reject'))).toEqual([
      'reject a requeue=false',
      'reject b requeue=false',
      'reject c requeue=false',
    ]);
    // The room it freed went to `d`, which stays unsettled.
    expect(sub.unackedCount).toBe(1);
    await sub.ack(4);
    expect(events).toContain('ack d');
    expect(sub.unackedCount).toBe(0);
  });

  test('a delivery made from a callback keeps the earlier one unsettled and in order', async () => {
    const { host, events, pending } = recordingHost();
    const held: Message[] = [];
    const sub = new Subscription<string>(host, 'q', { manualAck: true }, (m) => {
      held.push(m);
      if (m.bodyString() === 'a') {
        pending.push('b');
        host.pump(sub);
        expect(sub.unackedCount).toBe(2);
      }
    });
    pending.push('a');
    host.pump(sub);
    expect(held.map((m) => m.bodyString())).toEqual(['a', 'b']);
    expect(sub.unackedCount).toBe(2);
    await held[0]!.ack();
    await expect(held[0]!.ack()).rejects.toThrow(PreconditionFailedError);
    pending.push('c');
    host.pump(sub);
    await sub.close();
    expect(events.filter((e) => e.startsWith('ack') || e.startsWith('reject'))).toEqual([
      'ack a',
      'reject b requeue=true',
      'reject c requeue=true',
    ]);
  });

  test('an auto-acked callback that delivers again acks both, the later one first', () => {
    const { host, events, pending } = recordingHost();
    const sub = new Subscription<string>(host, 'q', { prefetch: 2 }, (m) => {
      if (m.bodyString() === 'a') {
        pending.push('b');
        host.pump(sub);
      }
    });
    pending.push('a');
    host.pump(sub);
    expect(events.filter((e) => e.startsWith('ack'))).toEqual(['ack b', 'ack a']);
    expect(sub.unackedCount).toBe(0);
  });

  test('a consumer closed from its callback returns the delivery in hand', async () => {
    const { host, events, pending } = recordingHost();
    let closing: Promise<void> | undefined;
    const sub = new Subscription<string>(host, 'q', {}, async () => {
      closing = sub.close();
      await flush();
    });
    pending.push('a');
    host.pump(sub);
    await closing;
    await flush();
    expect(events.filter((e) => e.startsWith('ack') || e.startsWith('reject'))).toEqual([
      'reject a requeue=true',
    ]);
    expect(sub.unackedCount).toBe(0);
  });

  test('cancel stops deliveries but unacked messages stay settleable', async () => {
    const { host, events, pending } = recordingHost();
    const held: Message[] = [];
    const sub = new Subscription<string>(host, 'q', { manualAck: true, prefetch: 1 }, (m) => {
      held.push(m);
    });
    pending.push('a', 'b');
    host.pump(sub);
    await sub.cancel();
    expect(sub.capacity).toBe(0);
    await held[0]!.ack();
    expect(events).toContain('ack a');
    expect(held).toHaveLength(1);
  });

  test('close returns unacked messages in delivery order and later acks fail', async () => {
    const { host, events, pending } = recordingHost();
    const held: Message[] = [];
    const sub = new Subscription<string>(host, 'q', { manualAck: true }, (m) => {
      held.push(m);
    });
    pending.push('a', 'b', 'c');
    host.pump(sub);
    await held[1]!.ack();
    await sub.close();
    expect(events.filter((e) => e.startsWith('reject'))).toEqual([
      'reject a requeue=true',
      'reject c requeue=true',
    ]);
    await expect(held[0]!.ack()).rejects.toThrow(ClosedError);
  });

  test('iterating acks the previous message as the loop advances and closes on break', async () => {
    const { host, events, pending } = recordingHost();
    const sub = new Subscription<string>(host, 'q', { prefetch: 2 });
    pending.push('a', 'b', 'c', 'd');
    host.pump(sub);
    const seen: string[] = [];
    for await (const m of sub) {
      seen.push(m.bodyString());
      if (seen.length === 3) break;
    }
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(events.filter((e) => e.startsWith('ack'))).toEqual(['ack a', 'ack b']);
    // The message in hand at break and the prefetched one go back to the queue.
    expect(events.filter((e) => e.startsWith('reject'))).toEqual([
      'reject c requeue=true',
      'reject d requeue=true',
    ]);
  });

  test('a waiting loop is woken by a delivery and ends on cancel', async () => {
    const { host, pending } = recordingHost();
    const sub = new Subscription<string>(host, 'q', {});
    const iterator = sub[Symbol.asyncIterator]();
    const first = iterator.next();
    pending.push('late');
    host.pump(sub);
    expect((await first).value?.bodyString()).toBe('late');
    const second = iterator.next();
    await sub.cancel();
    expect(await second).toEqual({ done: true, value: undefined });
  });

  test('a subscription with a callback cannot be iterated', () => {
    const { host } = recordingHost();
    const sub = new Subscription<string>(host, 'q', {}, () => {});
    expect(() => sub[Symbol.asyncIterator]()).toThrow(TypeError);
  });

  test('noAck deliveries are not tracked and cannot be acked', async () => {
    const { host, pending } = recordingHost();
    const held: Message[] = [];
    const sub = new Subscription<string>(host, 'q', { noAck: true }, (m) => {
      held.push(m);
    });
    pending.push('a');
    host.pump(sub);
    expect(sub.unackedCount).toBe(0);
    await expect(held[0]!.ack()).rejects.toThrow('unknown delivery tag 1');
  });

  test('delivered messages expose properties with the queue header and a private body', () => {
    const { host } = recordingHost();
    const held: Message[] = [];
    const sub = new Subscription<string>(host, 'q', { manualAck: true }, (m) => {
      held.push(m);
    });
    const stored = normalizeMessage('{"n":1}', { headers: { a: 1 } }, 'ex', 'rk');
    sub.deliver('e', stored, true, 'x-stream-offset', 7);
    const m = held[0]!;
    expect(m.properties.headers).toEqual({ a: 1, 'x-stream-offset': 7 });
    expect(m.redelivered).toBe(true);
    expect(m.exchange).toBe('ex');
    expect(m.routingKey).toBe('rk');
    expect(m.json()).toEqual({ n: 1 });
    m.body[0] = 0;
    expect(stored.body[0]).toBe('{'.charCodeAt(0));
    expect(m.bodySize).toBe(7);
  });
});
