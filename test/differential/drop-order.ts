/**
 * The documented order of a quorum queue's drop-head dead letters (README, "Differences from the
 * brokers": "A quorum queue dead-letters the messages one change drops oldest first"), as the
 * differential test recognises it. When one change (a publish, a requeue) drops several messages
 * from a quorum queue's head, mqlite dead-letters them oldest first, as RabbitMQ 4.2.1 and later
 * do; RabbitMQ 3.10 dead-letters them newest first. A `DropOrder` follows the drop-head dead
 * letters of an mqlite broker's quorum queues, grouped by the change that dropped them (one
 * synchronous run of one queue), and gives a dead-letter queue's contents in 3.10's order.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { DropEvent } from '../../src/diagnostics.js';
import { CHANNELS } from '../../src/diagnostics.js';

const decoder = new TextDecoder();

export class DropOrder {
  /** The followed quorum queues. */
  readonly #queues: ReadonlySet<string>;
  /** The bodies each change dropped, oldest first, in the order the changes came. */
  readonly #batches: string[][] = [];
  /** Each queue's batch while its change runs (until the next microtask). */
  readonly #open = new Map<string, string[]>();
  readonly #onDrop = (event: unknown) => {
    const { queue, reason, message, deadLettered } = event as DropEvent;
    if (!deadLettered || !this.#queues.has(queue)) return;
    if (reason !== 'maxlen' && reason !== 'maxlenbytes') return;
    let batch = this.#open.get(queue);
    if (batch === undefined) {
      batch = [];
      this.#open.set(queue, batch);
      this.#batches.push(batch);
      queueMicrotask(() => this.#open.delete(queue));
    }
    batch.push(decoder.decode(message.body));
  };

  /** Follows the drop-head dead letters of the quorum queues named `queues`. */
  constructor(queues: Iterable<string>) {
    this.#queues = new Set(queues);
    subscribe(CHANNELS.drop, this.#onDrop);
  }

  close(): void {
    unsubscribe(CHANNELS.drop, this.#onDrop);
  }

  /**
   * The positions of `bodies` (a dead-letter queue's, in order) as RabbitMQ 3.10 would fill it:
   * the messages of each change that dropped two or more trade places, newest first. Undefined
   * when no change dropped more than one.
   */
  as310(bodies: readonly string[]): number[] | undefined {
    const order = bodies.map((_, i) => i);
    let reordered = false;
    for (const batch of this.#batches) {
      if (batch.length < 2) continue;
      const at = batch.map((body) => bodies.indexOf(body)).filter((i) => i >= 0);
      const reversed = at.map((i) => order[i]!).reverse();
      for (const [k, i] of at.entries()) order[i] = reversed[k]!;
      reordered ||= at.length > 1;
    }
    return reordered ? order : undefined;
  }
}
