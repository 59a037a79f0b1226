/**
 * One broker as the differential test drives it: the client surface the parity suite uses
 * (`@cloudamqp/amqp-client`'s `AMQPSession`, or mqlite's in-process `Broker`), plus a look at a
 * queue's counts and a way to let the broker finish what it started.
 */
import { type AMQPChannel, AMQPClient, AMQPSession } from '@cloudamqp/amqp-client';
import { Broker } from '../../src/broker/broker.js';
import type { ParitySession } from '../parity/types.js';

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
}

/** mqlite's Broker in process, fresh for one sequence. */
export async function mqliteSide(): Promise<Side> {
  const broker = await Broker.open();
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
