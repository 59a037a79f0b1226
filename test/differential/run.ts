/**
 * Runs one operation sequence on two brokers in lockstep and compares what a client observes
 * after every operation (its result, every queue's counts, the deliveries each consumer got) and,
 * at the end, the contents of every queue and of the dead-letter queue.
 *
 * A real broker works asynchronously (deliveries, dead-lettering), so after each operation both
 * sides are observed again until they agree or a deadline passes: agreement is seen as soon as it
 * holds, and only a real difference waits for the deadline.
 */
import { randomBytes } from 'node:crypto';
import type { AMQPMessage } from '@cloudamqp/amqp-client';
import { countOf, replyCodeOf } from '../parity/helpers.js';
import type { ParityQueue, ParitySession } from '../parity/types.js';
import { normaliseOperation, normaliseReason } from './normalise.js';
import type { Operation, QueueSpec, Sequence } from './operations.js';
import type { Side } from './side.js';

/**
 * How long the two sides may take to agree after an operation: generous for a broker on a loaded
 * machine, short enough that shrinking a real difference (which waits it out each time) ends.
 */
const AGREE_MS = 5000;

interface Consumer {
  readonly connection: ParitySession;
  readonly queue: number;
  readonly received: AMQPMessage[];
  seen: number;
  open: boolean;
}

interface Unsettled {
  readonly message: AMQPMessage;
  readonly queue: number;
  /** The consumer it was delivered to; undefined when pulled with `get`. */
  readonly consumer: number | undefined;
}

/** One broker's part of a run. */
class Driver {
  readonly side: Side;
  readonly names: string[];
  readonly dlq: string;
  readonly handles: ParityQueue[] = [];
  dlqHandle!: ParityQueue;
  readonly consumers: Consumer[] = [];
  unsettled: Unsettled[] = [];
  readonly trace: string[] = [];

  constructor(side: Side, prefix: string, queues: number) {
    this.side = side;
    this.names = Array.from({ length: queues }, (_, i) => `${prefix}-q${i}`);
    this.dlq = `${prefix}-dlq`;
  }

  async declare(specs: readonly QueueSpec[]): Promise<void> {
    const session = this.side.session;
    this.dlqHandle = await session.queue(this.dlq, { durable: false });
    for (const [i, spec] of specs.entries()) {
      this.handles.push(
        await session.queue(this.names[i]!, {
          durable: spec.durable === true,
          arguments: queueArguments(spec, this.dlq),
        }),
      );
    }
  }

  async run(operation: Operation, publishNumber: number): Promise<string> {
    try {
      return await this.#run(operation, publishNumber);
    } catch (error) {
      return `error ${replyCodeOf(error) ?? (error as Error).message}`;
    }
  }

  async #run(operation: Operation, publishNumber: number): Promise<string> {
    switch (operation.op) {
      case 'publish': {
        const body = String(publishNumber).padEnd(operation.size, '.');
        const properties = {
          ...(operation.priority !== undefined && { priority: operation.priority }),
          ...(operation.expiration !== undefined && { expiration: operation.expiration }),
          ...(operation.header !== undefined && { headers: { h: operation.header } }),
        };
        try {
          await this.handles[operation.queue]!.publish(body, properties);
          return `published ${body}`;
        } catch {
          return `refused ${body}`;
        }
      }
      case 'get': {
        const message = await this.handles[operation.queue]!.get({ noAck: operation.noAck });
        if (!message) return 'empty';
        if (!operation.noAck) {
          this.unsettled.push({ message, queue: operation.queue, consumer: undefined });
        }
        return `got ${describe(message)} left ${message.messageCount}`;
      }
      case 'settle':
        return this.#settle(operation);
      case 'subscribe': {
        const connection = await this.side.connection();
        const queue = await connection.queue(this.names[operation.queue]!, { passive: true });
        const received: AMQPMessage[] = [];
        this.consumers.push({ connection, queue: operation.queue, received, seen: 0, open: true });
        await queue.subscribe({ prefetch: operation.prefetch, manualAck: true }, (m) => {
          received.push(m);
        });
        return `consumer ${this.consumers.length - 1}`;
      }
      case 'close': {
        const open = this.consumers.filter((c) => c.open);
        if (open.length === 0) return 'no consumer';
        const consumer = open[operation.consumer % open.length]!;
        const index = this.consumers.indexOf(consumer);
        consumer.open = false;
        await consumer.connection.stop();
        this.unsettled = this.unsettled.filter((u) => u.consumer !== index);
        return `closed consumer ${index}`;
      }
      case 'purge':
        return `purged ${countOf(await this.handles[operation.queue]!.purge())}`;
      case 'stats':
        return showCounts(await this.side.counts(this.names[operation.queue]!));
      case 'delete': {
        const count = countOf(await this.handles[operation.queue]!.delete());
        this.unsettled = this.unsettled.filter((u) => u.queue !== operation.queue);
        return `deleted ${count}`;
      }
    }
  }

  async #settle(operation: Extract<Operation, { op: 'settle' }>): Promise<string> {
    if (this.unsettled.length === 0) return 'nothing to settle';
    const picked = this.unsettled[operation.delivery % this.unsettled.length]!;
    const { message } = picked;
    const { requeue, multiple } = operation;
    if (operation.how === 'ack') await message.ack(multiple);
    else if (operation.how === 'nack') await message.nack(requeue, multiple);
    else await message.reject(requeue);
    const tag = message.deliveryTag;
    const scope = multiple && operation.how !== 'reject';
    this.unsettled = this.unsettled.filter(
      (u) =>
        u !== picked &&
        !(
          scope &&
          u.consumer === picked.consumer &&
          u.queue === picked.queue &&
          u.message.deliveryTag <= tag
        ),
    );
    return `${operation.how} ${describe(message)}`;
  }

  /** What a client sees now: counts of every queue, new deliveries of every consumer. */
  async observe(): Promise<string> {
    await this.side.quiesce();
    const parts: string[] = [];
    for (const name of [...this.names, this.dlq])
      parts.push(showCounts(await this.side.counts(name)));
    const deliveries = this.consumers.map((c, i) =>
      c.open && c.received.length > c.seen
        ? `c${i}<${c.received.slice(c.seen).map(describe).join(',')}`
        : '',
    );
    return `${parts.join(' ')} ${deliveries.filter(Boolean).join(' ')}`.trimEnd();
  }

  /** Takes in the deliveries `observe` reported, as unsettled, consumer by consumer. */
  commit(): void {
    for (const [i, c] of this.consumers.entries()) {
      for (const message of c.received.slice(c.seen)) {
        if (c.open) this.unsettled.push({ message, queue: c.queue, consumer: i });
      }
      c.seen = c.received.length;
    }
  }

  /** Every consumer goes; then what each queue and the DLQ hold, drained. */
  async closeConsumers(): Promise<void> {
    for (const c of this.consumers) {
      if (c.open) await c.connection.stop();
      c.open = false;
    }
    this.unsettled = this.unsettled.filter((u) => u.consumer === undefined);
  }

  async drain(deleted: ReadonlySet<number>): Promise<string> {
    const parts: string[] = [];
    const queues = [...this.handles.entries()].filter(([i]) => !deleted.has(i));
    for (const [i, q] of [...queues, [-1, this.dlqHandle] as const]) {
      const bodies: string[] = [];
      for (let m = await q.get({ noAck: true }); m; m = await q.get({ noAck: true })) {
        const reason = m.properties.headers?.['x-first-death-reason'];
        bodies.push(
          reason === undefined ? describe(m) : `${describe(m)}(${normaliseReason(reason)})`,
        );
      }
      parts.push(`${i < 0 ? 'dlq' : `q${i}`}[${bodies.join(',')}]`);
    }
    return parts.join(' ');
  }

  async cleanup(): Promise<void> {
    await this.closeConsumers().catch(() => undefined);
    // A deleted queue's handle deletes nothing (0): every name is gone after this.
    for (const q of [...this.handles, this.dlqHandle]) await q?.delete().catch(() => undefined);
    await this.side.close();
  }
}

function queueArguments(spec: QueueSpec, dlq: string): Record<string, unknown> {
  return {
    ...(spec.maxPriority !== undefined && { 'x-max-priority': spec.maxPriority }),
    ...(spec.maxLength !== undefined && { 'x-max-length': spec.maxLength }),
    ...(spec.maxLengthBytes !== undefined && { 'x-max-length-bytes': spec.maxLengthBytes }),
    ...(spec.overflow !== undefined && { 'x-overflow': spec.overflow }),
    ...(spec.deadLetter && { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': dlq }),
    ...(spec.singleActiveConsumer && { 'x-single-active-consumer': true }),
    ...(spec.messageTtl !== undefined && { 'x-message-ttl': spec.messageTtl }),
    ...spec.arguments,
  };
}

function describe(message: AMQPMessage): string {
  return `${message.bodyString()}${message.redelivered ? '*' : ''}`;
}

function showCounts(counts: Awaited<ReturnType<Side['counts']>>): string {
  return counts === 'gone' ? 'gone' : `${counts.ready}/${counts.consumers}`;
}

/** Observes both drivers until they agree or the deadline passes. */
async function agreed(a: Driver, b: Driver): Promise<[string, string]> {
  const end = Date.now() + AGREE_MS;
  for (;;) {
    const [x, y] = [await a.observe(), await b.observe()];
    if (x === y || Date.now() > end) {
      a.commit();
      b.commit();
      return [x, y];
    }
  }
}

/** Both traces, and whether they agree. */
export interface Comparison {
  readonly same: boolean;
  readonly report: string;
}

/**
 * Runs `sequence` on `reference` (the broker mqlite follows) and `subject` (mqlite), opened fresh
 * for it, in lockstep; stops at the first difference.
 */
export async function compareOn(
  sequence: Sequence,
  reference: () => Promise<Side>,
  subject: () => Promise<Side>,
): Promise<Comparison> {
  const prefix = `differential-${randomBytes(4).toString('hex')}`;
  const a = new Driver(await reference(), prefix, sequence.queues.length);
  const b = new Driver(await subject(), prefix, sequence.queues.length);
  const deleted = new Set<number>();
  let same = true;
  try {
    await a.declare(sequence.queues);
    await b.declare(sequence.queues);
    let published = 0;
    for (const [step, original] of sequence.operations.entries()) {
      const operation = await normaliseOperation(original, {
        deleted,
        busy: async (queue) => {
          const counts = await b.side.counts(b.names[queue]!);
          return counts !== 'gone' && counts.ready + counts.consumers > 0;
        },
        pulled: (n) => {
          const unsettled = b.unsettled;
          return unsettled.length > 0 && unsettled[n % unsettled.length]!.consumer === undefined;
        },
      });
      const label = `${step} ${JSON.stringify(original)}`;
      if ('skip' in operation) {
        a.trace.push(`${label} skipped: ${operation.skip}`);
        b.trace.push(`${label} skipped: ${operation.skip}`);
        continue;
      }
      const number = operation.op === 'publish' ? published++ : 0;
      const [x, y] = [await a.run(operation, number), await b.run(operation, number)];
      if (operation.op === 'delete') deleted.add(operation.queue);
      const [sx, sy] = await agreed(a, b);
      a.trace.push(`${label} → ${x} | ${sx}`);
      b.trace.push(`${label} → ${y} | ${sy}`);
      if (x !== y || sx !== sy) {
        same = false;
        break;
      }
    }
    // Every consumer goes, one by one as an operation, so a hand-over between them is observed.
    while (same && b.consumers.some((c) => c.open)) {
      const close: Operation = { op: 'close', consumer: 0 };
      const [x, y] = [await a.run(close, 0), await b.run(close, 0)];
      const [sx, sy] = await agreed(a, b);
      a.trace.push(`end ${JSON.stringify(close)} → ${x} | ${sx}`);
      b.trace.push(`end ${JSON.stringify(close)} → ${y} | ${sy}`);
      same = x === y && sx === sy;
    }
    if (same) {
      const [sx, sy] = await agreed(a, b);
      const [dx, dy] = [await a.drain(deleted), await b.drain(deleted)];
      a.trace.push(`end: ${sx} | ${dx}`);
      b.trace.push(`end: ${sy} | ${dy}`);
      same = sx === sy && dx === dy;
    }
  } finally {
    await a.cleanup();
    await b.cleanup();
  }
  return { same, report: report(sequence, a, b) };
}

function report(sequence: Sequence, a: Driver, b: Driver): string {
  const lines = [`queues: ${JSON.stringify(sequence.queues)}`];
  const n = Math.max(a.trace.length, b.trace.length);
  for (let i = 0; i < n; i++) {
    const [x, y] = [a.trace[i] ?? '', b.trace[i] ?? ''];
    if (x === y) lines.push(`  ${x}`);
    else lines.push(`≠ ${a.side.name}: ${x}`, `≠ ${b.side.name}: ${y}`);
  }
  return lines.join('\n');
}
