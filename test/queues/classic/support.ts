import { afterEach, beforeEach } from 'vitest';
import type { Message } from '../../../src/message/message.js';
import type { StoredMessage } from '../../../src/message/types.js';
import type { ClassicQueueOptions } from '../../../src/queues/classic/classic-options.js';
import type { ClassicQueue } from '../../../src/queues/classic/classic-queue.js';
import {
  PriorityQueue,
  type PriorityQueueOptions,
  Queue,
} from '../../../src/queues/priority-queue.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';
import { type StorageKind, TestStorage } from '../../support/test-storage.js';

export { STORAGE_KINDS, TestStorage } from '../../support/test-storage.js';

/**
 * Queues by name on one test's storage, with a dead-letter router over the default exchange as
 * the Broker provides it: the routing key names the target queue; an unknown target drops the
 * message. Made by {@link queuesPerTest}, which gives every test a fresh storage and clock.
 */
export class Queues {
  readonly byName = new Map<string, ClassicQueue>();
  readonly errors: unknown[] = [];
  readonly #kind: StorageKind;
  #clock = new ManualClock();
  #storage: TestStorage | undefined;

  constructor(kind: StorageKind) {
    this.#kind = kind;
  }

  /** The current test's clock. */
  get clock(): ManualClock {
    return this.#clock;
  }

  /** The current test's storage. */
  get storage(): TestStorage {
    if (this.#storage === undefined) throw new Error('no test is running');
    return this.#storage;
  }

  readonly router = (message: StoredMessage): Promise<void> | undefined =>
    this.byName.get(message.routingKey)?.publishMessage(message);

  #common(name: string) {
    return {
      name,
      storage: this.storage.storage,
      clock: this.#clock,
      deadLetter: this.router,
      onError: (error: unknown) => this.errors.push(error),
      onDelete: (deleted: string) => this.byName.delete(deleted),
    };
  }

  async priority(
    name: string,
    maxPriority: number | undefined,
    options: Partial<PriorityQueueOptions> = {},
  ): Promise<PriorityQueue> {
    const queue = await PriorityQueue.open({
      ...this.#common(name),
      ...(maxPriority !== undefined && { maxPriority }),
      ...options,
    });
    this.byName.set(name, queue);
    return queue;
  }

  async fifo(name: string, options: Partial<ClassicQueueOptions> = {}): Promise<Queue> {
    const queue = await Queue.open({ ...this.#common(name), ...options });
    this.byName.set(name, queue);
    return queue;
  }

  async closeAll(): Promise<void> {
    for (const queue of this.byName.values()) await queue.close();
    this.byName.clear();
  }

  /** Closes every queue and reopens the storage (a restart for fs). */
  async reopen(): Promise<void> {
    await this.closeAll();
    await this.storage.reopen();
  }

  /** @internal Per-test set-up and tear-down, registered by {@link queuesPerTest}. */
  start(): void {
    this.#storage = new TestStorage(this.#kind);
    this.#clock = new ManualClock();
    this.errors.length = 0;
  }

  /** @internal */
  async dispose(): Promise<void> {
    await this.closeAll();
    await this.#storage?.dispose();
    this.#storage = undefined;
  }
}

/**
 * Queues for the tests of the enclosing `describe`: each test gets a fresh storage of `kind`
 * and a fresh clock; its queues are closed and the storage disposed after it.
 */
export function queuesPerTest(kind: StorageKind): Queues {
  const queues = new Queues(kind);
  beforeEach(() => queues.start());
  afterEach(() => queues.dispose());
  return queues;
}

/** Queue arguments that dead-letter to the queue `dlq` through the default exchange. */
export const toDlq = { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'dlq' };

/** Lets microtasks and immediates run (requeued messages go out on the next macrotask). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Takes every ready message with `get` (no-ack) and returns the bodies. */
export async function drain(queue: ClassicQueue): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const message = await queue.get();
    if (message === null) return bodies;
    bodies.push(message.bodyString());
  }
}

/** Publishes each body (with optional properties) and waits until all are stored. */
export async function publishAll(
  queue: ClassicQueue,
  items: readonly (string | [string, Parameters<ClassicQueue['publish']>[1]])[],
): Promise<void> {
  await Promise.all(
    items.map((item) =>
      typeof item === 'string' ? queue.publish(item) : queue.publish(item[0], item[1]),
    ),
  );
}

/** A collecting consumer callback and what it received. */
export function collector() {
  const received: Message[] = [];
  return {
    received,
    bodies: () => received.map((m) => m.bodyString()),
    callback: (message: Message) => {
      received.push(message);
    },
  };
}
