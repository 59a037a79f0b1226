/**
 * The documented `x-death` order (README, "Differences from the brokers": "`x-death` lists a
 * message's deaths newest first, the older ones in the order they happened"), as the
 * differential test recognises it. mqlite keeps the older entries in order, as RabbitMQ 4.x
 * does; RabbitMQ 3.10 reverses them at each death, and both decide by that order whether a dead
 * letter closes a cycle (and is dropped). A `DeathOrder` follows every death on one mqlite
 * broker, keeps each message's history in both orders and notes the first dead letter whose fate
 * the two orders decide differently: the sides' traces part there, and only from there on may a
 * difference be this documented one.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { DeadLetterEvent, DropEvent } from '../../src/diagnostics.js';
import { CHANNELS } from '../../src/diagnostics.js';

/** One `x-death` entry as the cycle rule reads it. */
interface Death {
  readonly queue: string;
  readonly reason: string;
}

/** A message's deaths, newest first, in mqlite's (4.x) order and in RabbitMQ 3.10's. */
interface History {
  readonly kept: readonly Death[];
  readonly reversed: readonly Death[];
}

const decoder = new TextDecoder();

/**
 * The cycle rule of both brokers: delivering into `target` is dropped when `target` died the
 * message before and no death since (that one included) was a rejection.
 */
export function closesCycle(deaths: readonly Death[], target: string): boolean {
  for (const death of deaths) {
    if (death.reason === 'rejected') return false;
    if (death.queue === target) return true;
  }
  return false;
}

/** `deaths` after `death`: its entry moves (or comes) to the front; `reverse`: 3.10's rule. */
export function afterDeath(deaths: readonly Death[], death: Death, reverse: boolean): Death[] {
  const older = deaths.filter((d) => d.queue !== death.queue || d.reason !== death.reason);
  return [death, ...(reverse ? older.reverse() : older)];
}

export class DeathOrder {
  /** Each followed queue and the queue it dead-letters to. */
  readonly #targets: ReadonlyMap<string, string>;
  /** A queue's name as the run's traces show it. */
  readonly #label: (queue: string) => string;
  readonly #histories = new Map<string, History>();
  #parted: string | undefined;
  readonly #onDrop = (event: unknown) => {
    const { queue, reason, message, deadLettered } = event as DropEvent;
    if (deadLettered) this.#died(queue, reason, message.body);
  };
  readonly #onDeadLetter = (event: unknown) => {
    // Other reasons were seen as drops; a rejection is only dead-lettered (never as a cycle).
    const { queue, reason, message } = event as DeadLetterEvent;
    if (reason === 'rejected') this.#died(queue, reason, message.body);
  };

  /** Follows the deaths in the queues `targets` names, each dead-lettering to its value. */
  constructor(targets: ReadonlyMap<string, string>, label: (queue: string) => string) {
    this.#targets = targets;
    this.#label = label;
    subscribe(CHANNELS.drop, this.#onDrop);
    subscribe(CHANNELS.deadLetter, this.#onDeadLetter);
  }

  /** Where the two orders first decided a dead letter's fate differently, if they did. */
  get parted(): string | undefined {
    return this.#parted;
  }

  close(): void {
    unsubscribe(CHANNELS.drop, this.#onDrop);
    unsubscribe(CHANNELS.deadLetter, this.#onDeadLetter);
  }

  #died(queue: string, reason: string, body: Uint8Array): void {
    const target = this.#targets.get(queue);
    if (target === undefined) return;
    // RabbitMQ 3.10 words both length limits (and a refused publish) `maxlen`; one entry or two
    // for a queue's limits leaves the cycle rule's answer as it is.
    const limit = reason === 'maxlenbytes' || reason === 'overflow';
    const death = { queue, reason: limit ? 'maxlen' : reason };
    const id = decoder.decode(body);
    const before = this.#histories.get(id) ?? { kept: [], reversed: [] };
    const kept = afterDeath(before.kept, death, false);
    const reversed = afterDeath(before.reversed, death, true);
    this.#histories.set(id, { kept, reversed });
    const dropped = closesCycle(kept, target);
    if (this.#parted === undefined && dropped !== closesCycle(reversed, target)) {
      const hop = `${this.#label(queue)} to ${this.#label(target)}`;
      this.#parted = `${id} dead-lettered from ${hop}: ${dropped ? 'mqlite' : 'RabbitMQ 3.10'} drops it as a cycle`;
    }
  }
}
