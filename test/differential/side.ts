/**
 * One broker as the differential test drives it: the client surface the parity suite uses
 * (`@cloudamqp/amqp-client`'s `AMQPSession`, or mqlite's in-process `Broker`), plus a look at a
 * queue's counts and a way to let the broker finish what it started. mqlite's sides also run on
 * a `ManualClock` the test moves, and report what broke their invariants.
 */
import { type AMQPChannel, AMQPClient, AMQPSession } from '@cloudamqp/amqp-client';
import { Broker } from '../../src/broker/broker.js';
import { ClosedError } from '../../src/errors.js';
import { listen } from '../../src/server/server.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import type { ParitySession } from '../parity/types.js';
import { tapFrames } from './tap.js';

/** A queue's counts as a client sees them (a passive declare), or `gone`. */
export type QueueCounts = { readonly ready: number; readonly consumers: number } | 'gone';

export interface Side {
  readonly name: string;
  readonly session: ParitySession;
  /** Another connection to the same broker (mqlite: a `broker.session()`). */
  connection(): Promise<ParitySession>;
  counts(queue: string): Promise<QueueCounts>;
  /** Lets work the broker started finish (dispatch after a requeue, a round trip on a broker). */
  quiesce(): Promise<void>;
  close(): Promise<void>;
  /** mqlite: moves its clock to `elapsed` ms after the side opened (a real broker's time runs). */
  advanceTo?(elapsed: number): void;
  /**
   * mqlite: what broke an invariant since the side opened: a negative or inconsistent count, an
   * error the broker reported with nobody awaiting it, a frame the server wrote malformed.
   */
  violations?(): string[];
  /** mqlite: a queue's ready and unacknowledged counts as the broker keeps them. */
  tally?(queue: string): { readonly ready: number; readonly unacked: number } | undefined;
}

/** mqlite's broker on a `ManualClock`, with its invariants checked. */
async function openMqlite() {
  const clock = new ManualClock(Date.now());
  const start = clock.now();
  const errors: string[] = [];
  const broker = await Broker.open({
    clock,
    onError: (error, context) => {
      // A background task cut short by the broker closing is its expected end.
      if (error instanceof ClosedError) return;
      const where = context.queue === undefined ? '' : ` on ${context.queue}`;
      errors.push(`error reported (${context.source}${where}): ${String(error)}`);
    },
  });
  return {
    broker,
    advanceTo(elapsed: number) {
      if (start + elapsed > clock.now()) clock.setTime(start + elapsed);
    },
    violations() {
      const found = [...errors];
      for (const q of broker.queues()) {
        const { messages, messagesReady: ready, messagesUnacknowledged: unacked } = q;
        if (ready < 0 || unacked < 0 || q.consumers < 0 || messages !== ready + unacked) {
          found.push(
            `${q.name} counts ${messages} = ${ready} ready + ${unacked} unacked, ${q.consumers} consumers`,
          );
        }
      }
      return found;
    },
    tally(queue: string) {
      const info = broker.queues().find((q) => q.name === queue);
      return info && { ready: info.messagesReady, unacked: info.messagesUnacknowledged };
    },
  };
}

/** mqlite's Broker in process, fresh for one sequence. */
export async function mqliteSide(): Promise<Side> {
  const { broker, ...checks } = await openMqlite();
  return {
    name: 'mqlite',
    session: broker as unknown as ParitySession,
    connection: async () => broker.session() as unknown as ParitySession,
    async counts(queue) {
      const info = broker.queues().find((q) => q.name === queue);
      return info ? { ready: info.messagesReady, consumers: info.consumers } : 'gone';
    },
    async quiesce() {
      // A requeue dispatches on the next macrotask.
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    },
    close: () => broker.close(),
    ...checks,
  };
}

/**
 * mqlite served over AMQP by its own server, fresh for one sequence, through the same client as
 * the real broker; every frame the server writes passes a checking relay.
 */
export async function mqliteWireSide(): Promise<Side> {
  const { broker, violations, ...checks } = await openMqlite();
  const server = await listen(broker);
  const tap = await tapFrames(server.host, server.port);
  const side = await amqpSide('mqlite-wire', `amqp://guest:guest@127.0.0.1:${tap.port}`);
  return {
    ...side,
    ...checks,
    violations: () => [...violations(), ...tap.problems()],
    async close() {
      try {
        await side.close();
      } finally {
        await server.close();
        await tap.close();
        await broker.close();
      }
    },
  };
}

/** A real broker at `url`, through `@cloudamqp/amqp-client`. */
export async function amqpSide(name: string, url: string): Promise<Side> {
  const session = await AMQPSession.connect(url, { logger: null });
  const client = new AMQPClient(url);
  await client.connect();
  let channel: AMQPChannel | undefined;
  const statsChannel = async () => {
    if (!channel || channel.closed) channel = await client.channel();
    return channel;
  };
  return {
    name,
    session: session as unknown as ParitySession,
    connection: async () =>
      (await AMQPSession.connect(url, { logger: null })) as unknown as ParitySession,
    async counts(queue) {
      try {
        const ok = await (await statsChannel()).queueDeclare(queue, { passive: true });
        return { ready: ok.messageCount, consumers: ok.consumerCount };
      } catch {
        return 'gone';
      }
    },
    async quiesce() {
      await (await statsChannel()).exchangeDeclare('amq.direct', 'direct', { passive: true });
    },
    async close() {
      await session.stop();
      await client.close();
    },
  };
}
