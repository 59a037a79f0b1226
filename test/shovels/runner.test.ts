/**
 * The acknowledgements a shovel sends its source, with a destination that confirms out of order:
 * the runner on a host whose publish holds one message back until the test settles it.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { ShovelHost } from '../../src/broker/shovel-host.js';
import { createShovelRunner } from '../../src/shovels/runner.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { poll } from './poll.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close().catch(() => {});
});

/** A host on `broker` whose publish of the body `held` waits for `settle` (resolve or reject). */
function holdingHost(broker: Broker) {
  let settle: ((error?: Error) => void) | undefined;
  const host: ShovelHost = {
    broker: {
      vhost: broker.vhost,
      queue: (name, options) => broker.queue(name, options),
      session: () => broker.session(),
      async publish(exchange, body, options) {
        if (Buffer.from(body as Uint8Array).toString() === 'held') {
          await new Promise<void>((resolve, reject) => {
            settle = (error) => (error ? reject(error) : resolve());
          });
        }
        await broker.publish(exchange, body, options);
      },
    },
    clock: new ManualClock(),
    finished: () => {},
    position: () => undefined,
    savePosition: () => {},
  };
  return { host, settle: (error?: Error) => settle!(error) };
}

describe('shovel acknowledgements', () => {
  test.each(['on-confirm', 'on-publish'] as const)(
    'ack-mode %s: later messages confirmed before an earlier one do not acknowledge it; refused, it stays in the source',
    async (mode) => {
      const broker = await Broker.open();
      open.push(broker);
      const input = await broker.queue('in');
      for (const body of ['a', 'held', 'c', 'd']) await input.publish(body);
      const { host, settle } = holdingHost(broker);
      const runner = createShovelRunner(host);
      open.push(runner);
      await runner.start('s', {
        'src-uri': 'amqp://',
        'src-queue': 'in',
        'dest-uri': 'amqp://',
        'dest-queue': 'out',
        'ack-mode': mode,
        'src-prefetch-count': 10,
        'reconnect-delay': 0,
      });
      const out = await broker.queue('out');
      await poll(
        () => out.messageCount,
        (n) => n === 3,
        'a, c and d at the destination',
      );
      expect(runner.status('s')).toMatchObject({ forwarded: 1, inFlight: 3 });
      settle(new Error('refused'));
      await poll(
        () => runner.status('s')?.state,
        (state) => state === 'terminated',
        'the shovel to stop at the refusal',
      );
      await runner.stop('s');
      const left: string[] = [];
      for (let m = await input.get({ noAck: true }); m; m = await input.get({ noAck: true })) {
        left.push(m.bodyString());
      }
      expect(left).toContain('held');
      expect(left).not.toContain('a');
    },
  );
});
