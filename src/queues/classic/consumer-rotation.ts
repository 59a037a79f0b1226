/**
 * The order in which a classic queue offers messages to its consumers, RabbitMQ's: per consumer
 * priority (highest first) a line of consumers. The consumer at the front of the line gets the
 * next message if it has room, and goes to the back. One found full on its turn steps out of the
 * line and rejoins at the back once it has room again; a new consumer joins at the back.
 *
 * So the rotation position survives consumers joining, leaving and filling up: after c1, c2, c3
 * were served, the next message goes to c1 if it has room, whoever joined or left meanwhile.
 */
import type { Subscription } from '../consumer.js';

interface Slot<E> {
  readonly consumer: Subscription<E>;
  readonly line: Line<E>;
  prev: Slot<E> | undefined;
  next: Slot<E> | undefined;
  /** In the line (false: stepped out while full, or removed). */
  waiting: boolean;
  removed: boolean;
}

/** The consumers of one priority, front to back. */
interface Line<E> {
  readonly priority: number;
  head: Slot<E> | undefined;
  tail: Slot<E> | undefined;
  /** Consumers of this priority, in the line or out of it. */
  members: number;
}

/** Round-robin over consumers by priority; see the module comment for the rule. */
export class ConsumerRotation<E> {
  /** Lines by priority, highest first. */
  #lines: Line<E>[] = [];
  readonly #slots = new Map<Subscription<E>, Slot<E>>();

  /** A consumer joins at the back of the line of its priority. */
  add(consumer: Subscription<E>, priority: number): void {
    let line = this.#lines.find((l) => l.priority === priority);
    if (!line) {
      line = { priority, head: undefined, tail: undefined, members: 0 };
      this.#lines.push(line);
      this.#lines.sort((a, b) => b.priority - a.priority);
    }
    line.members++;
    const slot: Slot<E> = {
      consumer,
      line,
      prev: undefined,
      next: undefined,
      waiting: false,
      removed: false,
    };
    this.#slots.set(consumer, slot);
    this.#append(slot);
  }

  /** A consumer leaves for good. */
  remove(consumer: Subscription<E>): void {
    const slot = this.#slots.get(consumer);
    if (!slot) return;
    this.#slots.delete(consumer);
    slot.removed = true;
    if (slot.waiting) this.#unlink(slot);
    const line = slot.line;
    if (--line.members === 0) this.#lines = this.#lines.filter((l) => l !== line);
  }

  /** A consumer has room again: if it stepped out while full, it rejoins at the back. */
  freed(consumer: Subscription<E>): void {
    const slot = this.#slots.get(consumer);
    if (slot && !slot.waiting && !slot.removed && consumer.capacity > 0) this.#append(slot);
  }

  /** The consumer the next message goes to (sent to the back of its line), or undefined. */
  next(): Subscription<E> | undefined {
    for (const line of this.#lines) {
      let slot = line.head;
      while (slot !== undefined) {
        const following = slot.next;
        this.#unlink(slot);
        if (slot.consumer.capacity > 0) {
          this.#append(slot);
          return slot.consumer;
        }
        slot = following;
      }
    }
    return undefined;
  }

  #append(slot: Slot<E>): void {
    const line = slot.line;
    slot.prev = line.tail;
    slot.next = undefined;
    if (line.tail) line.tail.next = slot;
    else line.head = slot;
    line.tail = slot;
    slot.waiting = true;
  }

  #unlink(slot: Slot<E>): void {
    const line = slot.line;
    if (slot.prev) slot.prev.next = slot.next;
    else line.head = slot.next;
    if (slot.next) slot.next.prev = slot.prev;
    else line.tail = slot.prev;
    slot.prev = undefined;
    slot.next = undefined;
    slot.waiting = false;
  }
}
