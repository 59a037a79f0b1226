/**
 * One broker's part of a differential run: the queues it declared, its consumers and the
 * deliveries not yet settled, and what each operation returned, as a trace.
 */
import type { AMQPMessage } from '@cloudamqp/amqp-client';
import { countOf, replyCodeOf } from '../parity/helpers.js';
import type { ParityQueue, ParitySession } from '../parity/types.js';
import { DeathOrder } from './death-order.js';
import { DropOrder } from './drop-order.js';
import { normaliseReason } from './normalise.js';
import type { Operation, QueueSpec } from './operations.js';
import type { Side } from './side.js';

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
export class Driver {
  readonly side: Side;
  readonly names: string[];
  readonly dlq: string;
  readonly handles: ParityQueue[] = [];
  specs: readonly QueueSpec[] = [];
  dlqHandle!: ParityQueue;
  readonly consumers: Consumer[] = [];
  unsettled: Unsettled[] = [];
  readonly trace: string[] = [];
  /** mqlite's sides: the deaths of the run's messages, in both `x-death` orders. */
  deathOrder: DeathOrder | undefined;
  /** mqlite's sides: the drop-head dead letters of quorum queues, by the change that dropped them. */
  dropOrder: DropOrder | undefined;

  constructor(side: Side, prefix: string, queues: number) {
    this.side = side;
    this.names = Array.from({ length: queues }, (_, i) => `${prefix}-q${i}`);
    this.dlq = `${prefix}-dlq`;
  }

  async declare(specs: readonly QueueSpec[]): Promise<void> {
    const session = this.side.session;
    this.specs = specs;
    this.dlqHandle = await session.queue(this.dlq, { durable: false });
    for (const [i, spec] of specs.entries()) {
      this.handles.push(
        await session.queue(this.names[i]!, {
          // A quorum queue is durable or refused.
          durable: spec.quorum !== undefined,
          arguments: queueArguments(
            spec,
            spec.deadLetterTo === undefined ? this.dlq : this.names[spec.deadLetterTo]!,
          ),
        }),
      );
    }
  }

  /** Follows the deaths in the declared queues (an mqlite side: they are seen in process). */
  followDeaths(): void {
    const targets = new Map(
      [...this.specs.entries()]
        .filter(([, spec]) => spec.deadLetter)
        .map(([i, spec]) => [
          this.names[i]!,
          spec.deadLetterTo === undefined ? this.dlq : this.names[spec.deadLetterTo]!,
        ]),
    );
    const labels = new Map<string, string>(this.names.map((name, i) => [name, `q${i}`]));
    labels.set(this.dlq, 'dlq');
    this.deathOrder = new DeathOrder(targets, (queue) => labels.get(queue) ?? queue);
    this.dropOrder = new DropOrder(
      this.names.filter(
        (_, i) => this.specs[i]!.quorum && targets.get(this.names[i]!) === this.dlq,
      ),
    );
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
        const outcomes: string[] = [];
        for (let i = 0; i < (operation.burst ?? 1); i++) {
          outcomes.push(await this.#publish(operation, publishNumber + i));
        }
        return outcomes.join(', ');
      }
      case 'get': {
        const message = await this.handles[operation.queue]!.get({ noAck: operation.noAck });
        if (!message) return 'empty';
        if (!operation.noAck) {
          this.unsettled.push({ message, queue: operation.queue, consumer: undefined });
        }
        return `got ${this.#describe(message, operation.queue)} left ${message.messageCount}`;
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
        return this.#counts(operation.queue);
      case 'delete': {
        const count = countOf(await this.handles[operation.queue]!.delete());
        this.unsettled = this.unsettled.filter((u) => u.queue !== operation.queue);
        return `deleted ${count}`;
      }
      case 'wait':
        // The run makes the time pass: on a broker really, on mqlite's clock by as much.
        return `waited ${operation.ms} ms`;
    }
  }

  async #publish(operation: Extract<Operation, { op: 'publish' }>, n: number): Promise<string> {
    const body = String(n).padEnd(operation.size, '.');
    const expiration = operation.expiration ?? this.specs[operation.queue]!.expiration;
    const properties = {
      ...(operation.priority !== undefined && { priority: operation.priority }),
      ...(expiration !== undefined && { expiration: String(expiration) }),
      ...(operation.header !== undefined && { headers: { h: operation.header } }),
    };
    try {
      await this.handles[operation.queue]!.publish(body, properties);
      return `published ${body}`;
    } catch {
      return `refused ${body}`;
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
    return `${operation.how} ${this.#describe(message, picked.queue)}`;
  }

  /** What a client sees now: counts of every queue, new deliveries of every consumer. */
  async observe(): Promise<string> {
    await this.side.quiesce();
    const parts: string[] = [];
    for (let i = 0; i < this.names.length; i++) parts.push(await this.#counts(i));
    parts.push(showCounts(await this.side.counts(this.dlq)));
    const deliveries = this.consumers.map((c, i) =>
      c.open && c.received.length > c.seen
        ? `c${i}<${c.received
            .slice(c.seen)
            .map((m) => this.#describe(m, c.queue))
            .join(',')}`
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

  /**
   * What each queue and the DLQ hold, drained. Where the side keeps its own counts, they must
   * add up: a queue's ready messages are what the drain returns, its unacknowledged ones the
   * pulled deliveries still unsettled. `as310`: the same with the DLQ in the order RabbitMQ 3.10
   * dead-letters what one change drops from a quorum queue (see drop-order.ts), when it differs.
   */
  async drain(
    deleted: ReadonlySet<number>,
  ): Promise<{ text: string; violations: string[]; as310?: string }> {
    const parts: string[] = [];
    const violations: string[] = [];
    let as310: string | undefined;
    const queues = [...this.handles.entries()].filter(([i]) => !deleted.has(i));
    for (const [i, q] of [...queues, [-1, this.dlqHandle] as const]) {
      const name = i < 0 ? this.dlq : this.names[i]!;
      const tally = this.side.tally?.(name);
      const bodies: string[] = [];
      const ids: string[] = [];
      for (let m = await q.get({ noAck: true }); m; m = await q.get({ noAck: true })) {
        ids.push(m.bodyString() ?? '');
        const reason = m.properties.headers?.['x-first-death-reason'];
        bodies.push(
          reason === undefined
            ? this.#describe(m, i)
            : `${this.#describe(m, i)}(${normaliseReason(reason)})`,
        );
      }
      const held = this.unsettled.filter((u) => u.queue === i).length;
      if (tally && (tally.ready !== bodies.length || tally.unacked !== held)) {
        violations.push(
          `${name} counted ${tally.ready} ready + ${tally.unacked} unacked; drained ${bodies.length}, ${held} held`,
        );
      }
      parts.push(`${i < 0 ? 'dlq' : `q${i}`}[${bodies.join(',')}]`);
      const order = i < 0 ? this.dropOrder?.as310(ids) : undefined;
      if (order)
        as310 = [...parts.slice(0, -1), `dlq[${order.map((k) => bodies[k]).join(',')}]`].join(' ');
    }
    return { text: parts.join(' '), violations, ...(as310 !== undefined && { as310 }) };
  }

  /**
   * A queue's ready messages and consumers as declare-ok counts them; a quorum queue's consumers
   * are left out (DELIBERATE.quorumGetConsumer).
   */
  async #counts(queue: number): Promise<string> {
    const counts = await this.side.counts(this.names[queue]!);
    if (counts === 'gone' || !this.specs[queue]?.quorum) return showCounts(counts);
    return `${counts.ready}/-`;
  }

  /**
   * A delivery as the trace shows it: its body, `*` when redelivered and, from a quorum queue,
   * `#n` for its `x-delivery-count` (both brokers write it there).
   */
  #describe(message: AMQPMessage, queue: number): string {
    const headers = this.specs[queue]?.quorum ? message.properties.headers : undefined;
    const count = headers?.['x-delivery-count'];
    return `${describe(message)}${count === undefined ? '' : `#${count}`}`;
  }

  async cleanup(): Promise<void> {
    this.deathOrder?.close();
    this.dropOrder?.close();
    await this.closeConsumers().catch(() => undefined);
    // A deleted queue's handle deletes nothing (0): every name is gone after this.
    for (const q of [...this.handles, this.dlqHandle]) await q?.delete().catch(() => undefined);
    await this.side.close();
  }
}

export function queueArguments(spec: QueueSpec, dlq: string): Record<string, unknown> {
  return {
    ...(spec.maxPriority !== undefined && { 'x-max-priority': spec.maxPriority }),
    ...(spec.maxLength !== undefined && { 'x-max-length': spec.maxLength }),
    ...(spec.maxLengthBytes !== undefined && { 'x-max-length-bytes': spec.maxLengthBytes }),
    ...(spec.overflow !== undefined && { 'x-overflow': spec.overflow }),
    ...(spec.deadLetter && { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': dlq }),
    ...(spec.singleActiveConsumer && { 'x-single-active-consumer': true }),
    ...(spec.messageTtl !== undefined && { 'x-message-ttl': spec.messageTtl }),
    ...(spec.quorum && {
      'x-queue-type': 'quorum',
      'x-delivery-limit': spec.quorum.deliveryLimit,
    }),
  };
}

function describe(message: AMQPMessage): string {
  return `${message.bodyString()}${message.redelivered ? '*' : ''}`;
}

function showCounts(counts: Awaited<ReturnType<Side['counts']>>): string {
  return counts === 'gone' ? 'gone' : `${counts.ready}/${counts.consumers}`;
}
