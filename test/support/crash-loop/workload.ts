/**
 * What the crash loop's worker and checker agree on: the queues it works, the body of every
 * message (which names its queue and id and can be checked without remembering it), the
 * protocol lines and the seeded random numbers.
 */
import type { FsyncPolicy } from '../../../src/storage/fs/index.js';

/**
 * The dead-letter exchange of the quorum queue (durable fanout) and its target, a durable classic
 * queue the worker consumes and acks.
 */
export const QUORUM_DLX = 'quorum-dlx';
export const QUORUM_DEAD = 'quorum-dead';
/**
 * The quorum queue's delivery limit: the worker rejects (`requeue: false`) the deliveries of even
 * ids and requeues those of odd ids, which the limit then dead-letters.
 */
export const QUORUM_DELIVERY_LIMIT = 1;

export const QUEUES = {
  quorum: {
    arguments: {
      'x-queue-type': 'quorum',
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
      'x-dead-letter-exchange': QUORUM_DLX,
      'x-delivery-limit': QUORUM_DELIVERY_LIMIT,
      'x-max-length': 400,
    },
  },
  stream: { arguments: { 'x-queue-type': 'stream', 'x-stream-max-segment-size-bytes': 64 * 1024 } },
  prio: { arguments: { 'x-max-priority': 5 } },
  classic: { arguments: {} },
  lvq: { arguments: { 'qpid.last_value_queue_key': 'k' } },
} as const;

export type QueueName = keyof typeof QUEUES;
export const QUEUE_NAMES = Object.keys(QUEUES) as QueueName[];

/**
 * The durable delayed exchange the worker publishes to now and then (persistent messages, each
 * with its due time in a `due` header), routing by the key `d` to the queue of the same name.
 */
export const DELAYED = 'delayed';
export const DELAYED_DECLARATION = { arguments: { 'x-delayed-type': 'direct' } } as const;
/** Longest `x-delay` the worker asks for. */
export const MAX_DELAY_MS = 150;
/** What the ledger follows: the queues, and the delayed exchange with its queue. */
export type Target = QueueName | typeof DELAYED;
/** Prefix of the queues the worker declares and deletes now and then (`scratch-<kind>`). */
export const SCRATCH = 'scratch-';
/** Tag of the stream's tracked consumer. */
export const READER = 'reader';
/** Keys of the last-value queue. */
export const LVQ_KEYS = 24;

export type PolicyName = 'always' | 'interval';
export function fsyncOf(policy: PolicyName): FsyncPolicy {
  return policy === 'always' ? 'always' : { intervalMs: 20 };
}

/**
 * Message ids grow across the runs of a loop (run * 1e7 + sequence), so a newer value of an
 * LVQ key always has the larger id.
 */
export const idOf = (run: number, seq: number) => run * 1e7 + seq;

/** The body of message `id` of `queue`: its fill is a function of both. */
export function bodyOf(queue: Target, id: number): string {
  const fill = String.fromCharCode(97 + (id % 26)).repeat(id % 509);
  return `${queue}|${id}|${fill}|${(id * 2654435761) % 4294967296}`;
}

/** The id of a body made by {@link bodyOf} for `queue`, or undefined if it is not one. */
export function idOfBody(queue: Target, body: string): number | undefined {
  const id = Number(body.split('|')[1]);
  return Number.isSafeInteger(id) && bodyOf(queue, id) === body ? id : undefined;
}

/**
 * Lines the worker prints, each before the fact could reach the disk (or after it resolved):
 * - `R`: open and consuming;
 * - `S <queue> <first> <last>`: about to publish ids first..last;
 * - `P <queue> <id> [key]`: the publish resolved;
 * - `A <queue> <id>`: about to ack (for the stream, `<id>` is the offset; `A quorum-dead <id>`:
 *   about to ack the dead letter of quorum id `<id>`);
 * - `D quorum <id>`: about to reject or requeue a delivery of the quorum queue in a way that
 *   dead-letters it (rejected, or past the delivery limit);
 * - `Q declare|delete <queue>`: about to declare or delete a scratch queue; `Q done <queue>`:
 *   that resolved;
 * - `E delayed <id> <due> <now>`: a delayed message was delivered before it was due.
 */
export type WorkerLine = string;

/** mulberry32: small, fast, and the same sequence for a seed everywhere. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
