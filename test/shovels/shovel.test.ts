/**
 * Shovels on one broker and between a broker and a served one: definitions, lifecycle, the
 * ack modes, src-delete-after, forward headers, restarts from storage and reconnects.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ShovelDefinitionError } from '../../src/broker/shovel-definition.js';
import { NotFoundError } from '../../src/errors.js';
import { listen } from '../../src/server/server.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { poll } from './poll.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close().catch(() => {});
});
async function broker(options: Parameters<typeof Broker.open>[0] = {}) {
  const b = await Broker.open(options);
  open.push(b);
  return b;
}
const local = { 'src-uri': 'amqp://', 'dest-uri': 'amqp://' } as const;

describe('shovel definitions', () => {
  test('a definition RabbitMQ refuses is refused with its words', async () => {
    const b = await broker();
    const refused = async (value: object) => {
      const error = await b.setShovel('s', value as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ShovelDefinitionError);
      return (error as Error).message;
    };
    expect(await refused({ 'src-uri': 'amqp://', 'src-queue': 'q' })).toBe(
      'PRECONDITION_FAILED - Validation failed: Key "dest-uri" not found in s',
    );
    expect(await refused(local)).toContain("Must specify 'src-exchange' or 'src-queue'");
    expect(await refused({ ...local, 'src-queue': 'a', 'src-exchange': 'e' })).toContain(
      "Cannot specify 'src-exchange' and 'src-queue'",
    );
    expect(await refused({ ...local, 'src-queue': 'a', 'ack-mode': 'bogus' })).toContain(
      'ack-mode should be one of [<<"no-ack">>,<<"on-publish">>,<<"on-confirm">>], actually was <<"bogus">>',
    );
    expect(await refused({ ...local, 'src-queue': 'a', 'src-delete-after': -3 })).toContain(
      'src-delete-after should be a number greater than or equal to 0, "never" or "queue-length", actually was -3',
    );
    expect(await refused({ ...local, 'src-queue': 'a', bogus: 1 })).toContain(
      'Unrecognised terms [{<<"bogus">>,1}] in s',
    );
    expect(await refused({ ...local, 'src-uri': 'foo://u:secret@x', 'src-queue': 'a' })).toBe(
      'PRECONDITION_FAILED - Validation failed: "foo://u:***@x" not a valid URI: {{unexpected_uri_scheme,"foo"},"foo://u:***@x"}',
    );
    const uri = 'amqps://u:secret@h?cacertfile=%2Fca.pem&heartbeat=abc';
    const shown = '"amqps://u:***@h?cacertfile=%2Fca.pem&heartbeat=abc"';
    expect(await refused({ ...local, 'src-queue': 'a', 'dest-uri': uri })).toBe(
      `PRECONDITION_FAILED - Validation failed: ${shown} not a valid URI: {{invalid_amqp_params_parameter,heartbeat,"abc",[{"heartbeat","abc"}],{not_an_integer,"abc"}},${shown}}`,
    );
    expect(
      await refused({ ...local, 'src-queue': 'a', 'dest-publish-properties': { bogus: 1 } }),
    ).toContain('Unrecognised terms [{<<"bogus">>,1}] in dest-publish-properties');
    expect(await b.shovels()).toEqual([]);
  });

  test('clearShovel of a missing shovel is 404', async () => {
    const b = await broker();
    await expect(b.clearShovel('nope')).rejects.toBeInstanceOf(NotFoundError);
  });

  test('shovels are exported as parameters and load from a definitions file', async () => {
    const b = await broker();
    const value = { ...local, 'src-queue': 'in', 'dest-queue': 'out' };
    await b.setShovel('fwd', value);
    const exported = b.exportDefinitions();
    expect(exported.parameters).toEqual([{ vhost: '/', component: 'shovel', name: 'fwd', value }]);
    const again = await broker({ definitions: exported });
    expect((await again.shovels()).map((s) => s.name)).toEqual(['fwd']);
  });
});

describe('moving messages on one broker', () => {
  test('messages of the source queue reach the destination queue with forward headers', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const b = await broker({ clock });
    const input = await b.queue('in');
    for (let i = 0; i < 5; i++) await input.publish(`m${i}`, { headers: { n: i } });
    await b.setShovel('fwd', {
      ...local,
      'src-queue': 'in',
      'dest-queue': 'out',
      'dest-add-forward-headers': true,
      'dest-add-timestamp-header': true,
    });
    const out = await b.queue('out');
    await poll(
      () => out.messageCount,
      (n) => n === 5,
      'five messages',
    );
    expect(input.messageCount).toBe(0);
    const first = await out.get({ noAck: true });
    expect(first?.bodyString()).toBe('m0');
    expect(first?.properties.headers).toMatchObject({
      n: 0,
      'x-shovelled': [
        {
          'dest-queue': 'out',
          'dest-uri': 'amqp://',
          'shovel-name': 'fwd',
          'shovel-type': 'dynamic',
          'shovel-vhost': '/',
          'shovelled-by': expect.stringMatching(/^mqlite@/),
          'src-queue': 'in',
          'src-uri': 'amqp://',
        },
      ],
      'x-shovelled-timestamp': Date.UTC(2026, 0, 1) / 1000,
    });
    const [status] = await b.shovels();
    expect(status).toMatchObject({ name: 'fwd', state: 'running', forwarded: 5, pending: 0 });
  });

  test('src-delete-after queue-length moves what the queue held, then the shovel is gone', async () => {
    const b = await broker();
    const input = await b.queue('in');
    for (let i = 0; i < 3; i++) await input.publish(`m${i}`);
    await b.setShovel('once', {
      ...local,
      'src-queue': 'in',
      'dest-queue': 'out',
      'src-delete-after': 'queue-length',
    });
    await poll(
      () => b.shovels(),
      (s) => s.length === 0,
      'the shovel to delete itself',
    );
    expect((await b.queue('out')).messageCount).toBe(3);
    await input.publish('later');
    expect(input.messageCount).toBe(1);
    expect(b.exportDefinitions().parameters).toEqual([]);
  });

  test('src-delete-after N moves N messages and leaves the rest', async () => {
    const b = await broker();
    const input = await b.queue('in');
    for (let i = 0; i < 10; i++) await input.publish(`m${i}`);
    await b.setShovel('four', {
      ...local,
      'src-queue': 'in',
      'dest-queue': 'out',
      'src-delete-after': 4,
      'src-prefetch-count': 3,
    });
    await poll(
      () => b.shovels(),
      (s) => s.length === 0,
      'the shovel to delete itself',
    );
    expect((await b.queue('out')).messageCount).toBe(4);
    expect(input.messageCount).toBe(6);
  });

  test.each(['on-confirm', 'on-publish', 'no-ack'] as const)(
    'ack-mode %s moves every message and leaves none unacknowledged',
    async (mode) => {
      const b = await broker();
      const input = await b.queue('in');
      for (let i = 0; i < 20; i++) await input.publish(`m${i}`);
      await b.setShovel('s', {
        ...local,
        'src-queue': 'in',
        'dest-queue': 'out',
        'ack-mode': mode,
        'src-prefetch-count': 5,
      });
      const out = await b.queue('out');
      await poll(
        () => out.messageCount,
        (n) => n === 20,
        'every message',
      );
      await b.clearShovel('s');
      expect(input.messageCount).toBe(0);
      expect(b.queues().find((q) => q.name === 'in')?.messages).toBe(0);
    },
  );

  test('dest-publish-properties set the properties of every message', async () => {
    const b = await broker();
    await (await b.queue('in')).publish('x', { deliveryMode: 1 });
    await b.setShovel('p', {
      ...local,
      'src-queue': 'in',
      'dest-queue': 'out',
      'dest-publish-properties': { delivery_mode: 2, app_id: 'edge' },
    });
    const out = await b.queue('out');
    await poll(
      () => out.messageCount,
      (n) => n === 1,
      'the message',
    );
    const message = await out.get({ noAck: true });
    expect(message?.properties).toMatchObject({ deliveryMode: 2, appId: 'edge' });
  });

  test('a shovel from an exchange forwards what is published there after it started', async () => {
    const b = await broker();
    await b.exchange('events', 'topic');
    await b.setShovel('ex', {
      ...local,
      'src-exchange': 'events',
      'src-exchange-key': 'a.*',
      'dest-queue': 'out',
    });
    await poll(
      () => b.shovels(),
      (s) => s[0]?.state === 'running',
      'running',
    );
    await b.publish('events', 'yes', { routingKey: 'a.b' });
    await b.publish('events', 'no', { routingKey: 'b.b' });
    const out = await b.queue('out');
    await poll(
      () => out.messageCount,
      (n) => n === 1,
      'the message',
    );
    expect((await out.get({ noAck: true }))?.bodyString()).toBe('yes');
  });

  test('clearShovel stops it: later messages stay in the source', async () => {
    const b = await broker();
    await b.setShovel('s', { ...local, 'src-queue': 'in', 'dest-queue': 'out' });
    await poll(
      () => b.shovels(),
      (s) => s[0]?.state === 'running',
      'running',
    );
    await b.clearShovel('s');
    const input = await b.queue('in');
    await input.publish('stays');
    expect(input.messageCount).toBe(1);
    expect(await b.shovels()).toEqual([]);
  });
});

describe('a shovel to a served broker', () => {
  test('forwards, shows terminated while the remote is away, resumes on the clock, and masks the password', async () => {
    const clock = new ManualClock();
    const remote = await Broker.open();
    open.push(remote);
    let server = await listen(remote, { port: 0 });
    const port = server.port;
    const b = await broker({ clock });
    const input = await b.queue('in');
    const uri = `amqp://guest:guest@127.0.0.1:${port}`;
    await b.setShovel('up', {
      'src-uri': 'amqp://',
      'src-queue': 'in',
      'dest-uri': uri,
      'dest-queue': 'central',
      'reconnect-delay': 2,
    });
    await input.publish('one');
    const central = await remote.queue('central');
    await poll(
      () => b.shovels(),
      (s) => s[0]?.forwarded === 1,
      'the first message acked',
    );
    expect(central.messageCount).toBe(1);
    await server.close();
    await poll(
      () => b.shovels(),
      (s) => s[0]?.state === 'terminated',
      'terminated',
    );
    const [down] = await b.shovels();
    expect(down?.destination).toBe(`amqp://guest:***@127.0.0.1:${port}`);
    expect(JSON.stringify(down)).not.toContain('guest@');
    await input.publish('two');
    await input.publish('three');
    expect((await b.shovels())[0]?.pending).toBe(2);
    server = await listen(remote, { port });
    open.push(server);
    clock.advance(2000);
    await poll(
      () => central.messageCount,
      (n) => n === 3,
      'the messages kept meanwhile',
    );
    expect((await b.shovels())[0]?.state).toBe('running');
  });

  test('reconnect-delay 0: a failed shovel stays terminated, as on RabbitMQ', async () => {
    const clock = new ManualClock();
    const b = await broker({ clock });
    await b.setShovel('once', {
      'src-uri': 'amqp://',
      'src-queue': 'in',
      'dest-uri': 'amqp://127.0.0.1:1',
      'dest-queue': 'x',
      'reconnect-delay': 0,
    });
    await poll(
      () => b.shovels(),
      (s) => s[0]?.state === 'terminated',
      'terminated',
    );
    expect(clock.pendingTimers).toBe(0);
    expect((await b.shovels())[0]?.reason).toContain('ECONNREFUSED');
  });

  test('a destination queue missing on the remote is declared durable at the first attempt', async () => {
    const remote = await Broker.open();
    open.push(remote);
    const server = await listen(remote, { port: 0 });
    open.push(server);
    const b = await broker({ clock: new ManualClock() });
    await (await b.queue('in')).publish('x');
    await b.setShovel('up', {
      'src-uri': 'amqp://',
      'src-queue': 'in',
      'dest-uri': server.url,
      'dest-queue': 'made-here',
    });
    await poll(
      () => b.shovels(),
      (s) => s[0]?.forwarded === 1,
      'the message forwarded without a retry (the clock never moves)',
    );
    expect(remote.queues().find((q) => q.name === 'made-here')?.durable).toBe(true);
  });

  test('a broker reopened on its storage resumes its shovels', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mqlite-shovel-'));
    try {
      const first = await Broker.open({ storage: fsStorage({ dir }) });
      await first.setShovel('s', { ...local, 'src-queue': 'in', 'dest-queue': 'out' });
      await first.close();
      const second = await broker({ storage: fsStorage({ dir }) });
      await (await second.queue('in')).publish('after restart');
      const out = await second.queue('out');
      await poll(
        () => out.messageCount,
        (n) => n === 1,
        'the message',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the mqlite:shovel channel', () => {
  test('tells each state a shovel goes through', async () => {
    const { subscribe, unsubscribe } = await import('node:diagnostics_channel');
    const seen: string[] = [];
    const listener = (event: unknown) => {
      const e = event as { name: string; state: string };
      if (e.name === 'watched') seen.push(e.state);
    };
    subscribe('mqlite:shovel', listener);
    try {
      const b = await broker();
      await (await b.queue('in')).publish('x');
      await b.setShovel('watched', {
        ...local,
        'src-queue': 'in',
        'dest-queue': 'out',
        'src-delete-after': 1,
      });
      await poll(
        () => seen,
        (s) => s.includes('deleted'),
        'deleted',
      );
      expect(seen).toEqual(['starting', 'running', 'terminated', 'deleted']);
    } finally {
      unsubscribe('mqlite:shovel', listener);
    }
  });
});
