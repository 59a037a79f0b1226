/**
 * The queues a broker has open, by name: declaring one (a passive lookup, a redeclaration checked
 * against the first, or a new queue recorded and opened), exclusive queues kept to their owner,
 * auto-delete queues deleted once unused, deleting and forgetting, bindings to exchanges, and the
 * policies in force on each. Declarations and deletions run one at a time, so two never race on
 * one name.
 */

import { type ErrorSource, reportError } from '../diagnostics.js';
import {
  assertOpen,
  ClosedError,
  NotFoundError,
  NotImplementedError,
  PreconditionFailedError,
  ResourceLockedError,
  resourceName,
} from '../errors.js';
import { deduplicationOptions } from '../exchanges/deduplication.js';
import type { MessageProperties, PublishBody } from '../message/types.js';
import type { DeadLetterRouter } from '../queues/classic/dead-letter.js';
import type { Subscription } from '../queues/consumer.js';
import { QuorumQueue } from '../queues/quorum/quorum-queue.js';
import { refuseUnknownArguments } from '../queues/unknown-names.js';
import type { BrokerContext } from './broker-context.js';
import { createDeadLetterRouter } from './dead-letter.js';
import {
  type Declaration,
  type QueueDeclareOptions,
  resolveDeclaration,
} from './declare-options.js';
import { assertEquivalent } from './equivalence.js';
import type { ExchangePublishOptions } from './exchange-handle.js';
import {
  attachBindings,
  type BrokerQueue,
  type DeletedQueueRoutes,
  type DeleteQueueOptions,
  type QueueBinder,
  redirectDeleted,
} from './queue-handle.js';
import { appliedPolicy } from './queue-info.js';
import { type AnyQueue, KINDS, queueStats } from './queue-kinds.js';
import { checkQueueName } from './queue-name.js';
import { keepOwnDeclaration } from './queue-storage.js';
import { deadLetterRoutingKeys } from './sender-selected.js';

/** Publishes through the broker's exchanges, as `broker.publish()` does. */
export type PublishFunction = (
  exchange: string,
  body: PublishBody,
  options: ExchangePublishOptions,
) => Promise<void>;

/** An open queue with what the broker knows of it. */
export interface OpenQueue {
  readonly declaration: Declaration;
  readonly queue: BrokerQueue;
  /** The queue's own `delete()`, run once the broker's checks passed. */
  readonly destroy: () => Promise<number>;
  /** The session (or the broker itself) an exclusive queue belongs to. */
  readonly owner: object | undefined;
}

/** The open queues of one broker. */
export class OpenQueues {
  readonly #context: BrokerContext;
  readonly #entries = new Map<string, OpenQueue>();
  /** Queues being deleted: out of `#entries`, their declarations still stored. */
  readonly #deleting = new Set<OpenQueue>();
  readonly #deadLetter: DeadLetterRouter;
  readonly #publish: PublishFunction;
  /** While the stored queues reopen, the end of that (see `whileRestoring`). */
  #restoring: Promise<void> | undefined;
  /** Declarations and deletions run one at a time, so two never race on one name. */
  #operations: Promise<unknown> = Promise.resolve();
  readonly #binder: QueueBinder = {
    bind: (queue, exchange, routingKey, args) =>
      this.#bindings(queue, () => this.#context.exchanges.bind(exchange, queue, routingKey, args)),
    unbind: (queue, exchange, routingKey, args) =>
      this.#bindings(queue, () =>
        this.#context.exchanges.unbind(exchange, queue, routingKey, args),
      ),
    delete: (queue, options) => this.delete(queue, options),
  };
  readonly #deletedRoutes: DeletedQueueRoutes = {
    publish: (queue, body, properties) =>
      this.#publish('', body, { ...properties, routingKey: queue }),
    current: (queue) => this.existing(queue).queue,
  };

  /** @param publish where the handle of a deleted queue publishes. */
  constructor(context: BrokerContext, publish: PublishFunction) {
    this.#context = context;
    this.#publish = publish;
    const { exchanges } = context;
    this.#deadLetter = createDeadLetterRouter(
      (exchange, routingKey, properties) =>
        exchanges.route(
          exchange,
          deadLetterRoutingKeys(routingKey, properties.headers),
          properties.headers,
          properties,
        ),
      (name) => this.#entries.get(name)?.queue,
      () => this.#restoring,
    );
  }

  /**
   * Runs `restore` (the reopening of the stored queues) with dead letters held until it ends: a
   * queue that expires messages as it opens sends them to queues that open after it.
   */
  async whileRestoring(restore: () => Promise<void>): Promise<void> {
    let release!: () => void;
    this.#restoring = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      await restore();
    } finally {
      this.#restoring = undefined;
      release();
    }
  }

  /** The open queue of that name, if there is one. */
  get(name: string): OpenQueue | undefined {
    return this.#entries.get(name);
  }

  has(name: string): boolean {
    return this.#entries.has(name);
  }

  /** Every open queue, in the order they were opened. */
  values(): IterableIterator<OpenQueue> {
    return this.#entries.values();
  }

  /**
   * The open queue of that name, which must exist.
   * @throws the queue's error when it is damaged; NotFoundError (404) when there is none.
   */
  existing(name: string): OpenQueue {
    assertOpen(this.#context.closed(), 'broker');
    this.#checkDamaged(checkQueueName(name));
    const entry = this.#entries.get(name);
    if (!entry) throw new NotFoundError(`no ${this.#queueText(name)}`);
    return entry;
  }

  /** Declares a queue on behalf of `owner` (which owns it when it is exclusive). */
  declare(
    nameArg: string,
    options: QueueDeclareOptions | undefined,
    owner: object,
  ): Promise<BrokerQueue> {
    try {
      assertOpen(this.#context.closed(), 'broker');
      const passive = options?.passive === true;
      const name = checkQueueName(nameArg, !passive, !passive);
      if (passive) return this.#serialized(async () => this.#passive(name, owner));
      const declaration = this.#resolve(name, options, nameArg !== '');
      return this.#serialized(() => this.#create(declaration, owner));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Throws what declaring the queue on behalf of `owner` would throw; declares nothing. */
  check(name: string, options: QueueDeclareOptions, owner: object): void {
    const declaration = this.#resolve(checkQueueName(name, false, true), options, true);
    const existing = this.#entries.get(name);
    if (existing) {
      this.#checkOwner(existing, owner, declaration.exclusive);
      assertEquivalent(existing.declaration, declaration, this.#context.vhost);
    } else {
      KINDS[declaration.kind].validate(declaration, this.#context.vhost);
    }
  }

  /** Opens a declared queue and registers it. */
  async open(declaration: Declaration, owner: object | undefined): Promise<OpenQueue> {
    const { queueStorage: storage, damaged } = this.#context;
    const name = declaration.name;
    let entry: OpenQueue | undefined;
    const queue = await KINDS[declaration.kind].open(declaration, {
      storage,
      namespace: name,
      clock: this.#context.clock,
      deadLetter: this.#deadLetter,
      onDelete: () => {
        if (!entry) return;
        if (this.#entries.get(name) === entry || this.#deleting.delete(entry)) this.#forget(name);
        redirectDeleted(entry.queue, this.#deletedRoutes);
      },
      onError: this.#context.onError,
      strict: this.#context.strict,
      vhost: this.#context.vhost,
      onDataLoss: (loss) => damaged.report(loss, name),
    });
    const destroy = queue.delete.bind(queue);
    entry = { declaration, queue: attachBindings(queue, this.#binder), destroy, owner };
    if (deduplicationOptions(declaration.arguments) !== undefined) {
      // The broker deduplicates as it routes: the handle publishes through the default exchange,
      // as an AMQP client's queue handle does.
      Object.defineProperty(queue, 'publish', {
        value: (body: PublishBody, properties?: MessageProperties) =>
          this.#deletedRoutes.publish(name, body, properties),
        writable: true,
        configurable: true,
      });
    }
    this.#entries.set(name, entry);
    if (declaration.autoDelete) this.#deleteWhenUnused(entry);
    await this.#applyPolicy(entry);
    return entry;
  }

  /**
   * Deletes a queue, a damaged one with its data; resolves with how many messages it held (0
   * when there was no such queue).
   * @throws PreconditionFailedError (406) when `ifUnused` and it has consumers, or `ifEmpty` and
   *   it holds messages.
   */
  delete(name: string, options: DeleteQueueOptions = {}): Promise<number> {
    try {
      assertOpen(this.#context.closed(), 'broker');
      return this.#delete(checkQueueName(name), options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Deletes every exclusive queue `owner` declared. */
  async deleteOwned(owner: object): Promise<void> {
    const owned = [...this.#entries.values()].filter((e) => e.owner === owner);
    for (const entry of owned) await this.#delete(entry.declaration.name);
  }

  /** Applies the policies now in force to every queue, after the operations under way. */
  applyPolicies(): Promise<void> {
    return this.#serialized(async () => {
      await Promise.all([...this.#entries.values()].map((entry) => this.#applyPolicy(entry)));
      await this.#context.registry.sync();
    });
  }

  /**
   * Deletes the exclusive queues and closes every other one, as at a broker's shutdown. Resolves
   * with the errors met (a queue closed already is none).
   */
  async close(): Promise<unknown[]> {
    const errors: unknown[] = [];
    for (const entry of [...this.#entries.values()]) {
      try {
        if (entry.declaration.exclusive) await entry.destroy();
        else await entry.queue.close();
      } catch (error) {
        if (!(error instanceof ClosedError)) errors.push(error);
      }
    }
    this.#entries.clear();
    return errors;
  }

  /** Resolves once the declarations and deletions under way are done. */
  settled(): Promise<unknown> {
    return this.#operations;
  }

  /**
   * Resolves a declaration; nothing is touched. The kind's own arguments are validated only for a
   * queue to be created ({@link KINDS}' `validate`): a redeclaration is compared first.
   */
  #resolve(name: string, options: QueueDeclareOptions | undefined, named: boolean): Declaration {
    const { vhost } = this.#context;
    const { passive: _passive, ...declaration } = resolveDeclaration(name, options, named, vhost);
    if (this.#context.strict) {
      const { arguments: known } = KINDS[declaration.kind];
      refuseUnknownArguments(declaration.arguments, known, 'argument', name, vhost);
    }
    return declaration;
  }

  #passive(name: string, owner: object): BrokerQueue {
    assertOpen(this.#context.closed(), 'broker');
    this.#checkDamaged(name);
    const entry = this.#entries.get(name);
    if (!entry) throw new NotFoundError(`no ${this.#queueText(name)}`);
    this.#checkOwner(entry, owner, undefined);
    touch(entry.queue);
    return entry.queue;
  }

  async #create(declaration: Declaration, owner: object): Promise<BrokerQueue> {
    assertOpen(this.#context.closed(), 'broker');
    this.#checkDamaged(declaration.name);
    const existing = this.#entries.get(declaration.name);
    if (existing) {
      this.#checkOwner(existing, owner, declaration.exclusive);
      assertEquivalent(existing.declaration, declaration, this.#context.vhost);
      touch(existing.queue);
      return existing.queue;
    }
    KINDS[declaration.kind].validate(declaration, this.#context.vhost);
    const { registry } = this.#context;
    // Recorded (unfinished) before its storage exists, so a crash in between leaves no unlisted
    // namespace, and a declared queue without its storage only as one the next open deletes.
    registry.save(declaration, true);
    await registry.sync();
    let entry: OpenQueue;
    try {
      entry = await this.open(declaration, declaration.exclusive ? owner : undefined);
    } catch (error) {
      await this.#undoCreate(declaration.name);
      throw error;
    }
    if (this.#entries.get(declaration.name) !== entry) return entry.queue;
    registry.save(declaration);
    await registry.sync();
    // Only a finished declare leaves the copy: the next open tells an unfinished one by its absence.
    await keepOwnDeclaration(this.#context.storage, declaration, true);
    return entry.queue;
  }

  /**
   * Removes what a declare that failed (a full disk, too many open files) began: its storage,
   * then its record. If that fails too, the record stays unfinished and the next open removes
   * the rest, so nothing of the declare outlives it and its name can be declared again.
   */
  async #undoCreate(name: string): Promise<void> {
    const { storage, registry } = this.#context;
    try {
      await storage.deleteNamespace(name);
      registry.remove(name);
      await registry.sync();
    } catch (error) {
      this.#reportError(error, 'storage', name);
    }
  }

  #applyPolicy({ declaration: d, queue }: OpenQueue): Promise<void> {
    const { policies, vhost } = this.#context;
    return KINDS[d.kind].applyArguments(queue, appliedPolicy(policies, d).arguments, vhost);
  }

  /**
   * RabbitMQ's rule for exclusive queues: only the declaring connection may use one, and a
   * redeclare must agree on exclusivity (405 otherwise).
   */
  #checkOwner(entry: OpenQueue, owner: object, exclusive: boolean | undefined): void {
    const mismatch = exclusive !== undefined && exclusive !== entry.declaration.exclusive;
    if (mismatch || (entry.owner !== undefined && entry.owner !== owner)) {
      throw new ResourceLockedError(
        `cannot obtain exclusive access to locked ${this.#queueText(entry.declaration.name)}. It could be originally declared on another connection or the exclusive property value does not match that of the original declaration.`,
      );
    }
  }

  /** Deletes an auto-delete queue once its last consumer is gone. */
  #deleteWhenUnused(entry: OpenQueue): void {
    const queue: AnyQueue = entry.queue;
    const subscribe = queue.subscribe.bind(queue) as (...args: unknown[]) => Promise<Subscription>;
    // Wrapping only `subscribe` of this one queue keeps every other call as fast as unwrapped.
    const tracked = async (...args: unknown[]) => {
      const subscription = await subscribe(...args);
      subscription.onCancelled(() => {
        // The queue forgets the consumer within the cancel call: look once it returned.
        queueMicrotask(() => {
          const name = entry.declaration.name;
          if (this.#context.closed() || queue.consumerCount > 0) return;
          if (this.#entries.get(name) !== entry) return;
          this.#delete(name).catch((error: unknown) =>
            this.#reportError(error, 'queue-delete', name),
          );
        });
      });
      return subscription;
    };
    (queue as { subscribe: unknown }).subscribe = tracked;
  }

  #delete(name: string, options: DeleteQueueOptions = {}): Promise<number> {
    return this.#serialized(async () => {
      const { damaged } = this.#context;
      if (damaged.has(name)) {
        await this.#context.queueStorage.deleteNamespace(name);
        damaged.delete(name);
        this.#forget(name);
        return 0;
      }
      const entry = this.#entries.get(name);
      if (!entry) return 0;
      if (entry.queue instanceof QuorumQueue) {
        checkQuorumDelete(this.#queueText(name), options);
      }
      const stats = queueStats(entry.queue);
      if (options.ifUnused && stats.consumers > 0) {
        throw new PreconditionFailedError(`${this.#queueText(name)} in use`);
      }
      // Unacknowledged messages do not count, as on RabbitMQ.
      if (options.ifEmpty && stats.messagesReady > 0) {
        throw new PreconditionFailedError(`${this.#queueText(name)} not empty`);
      }
      return this.#destroy(entry);
    });
  }

  /**
   * Deletes an open queue. It is gone for every method that names it from the start, as on
   * RabbitMQ, where a queue is either there or not: a publish no longer reaches it, a lookup
   * finds none (404), its handle already reaches the broker by name; its stored declaration is
   * forgotten once its storage is removed.
   */
  #destroy(entry: OpenQueue): Promise<number> {
    const name = entry.declaration.name;
    this.#entries.delete(name);
    this.#deleting.add(entry);
    this.#context.exchanges.removeDestination(name);
    redirectDeleted(entry.queue, this.#deletedRoutes);
    return entry.destroy().finally(() => this.#deleting.delete(entry));
  }

  /** The queue is gone (deleted by anyone, or expired): forget it. */
  #forget(name: string): void {
    const { registry } = this.#context;
    this.#entries.delete(name);
    registry.remove(name);
    this.#context.exchanges.removeDestination(name);
    this.#context.deleted('queue', name);
    // While closing, the final sync writes it.
    if (!this.#context.closed()) {
      registry.sync().catch((error: unknown) => this.#reportError(error, 'registry'));
    }
  }

  /** Runs a bind or unbind for a queue that must exist, and persists the change. */
  async #bindings(queue: string, change: () => boolean): Promise<void> {
    assertOpen(this.#context.closed(), 'broker');
    this.#checkDamaged(queue);
    if (!this.#entries.has(queue)) throw new NotFoundError(`no ${this.#queueText(queue)}`);
    if (change()) await this.#context.registry.sync();
  }

  /** "queue 'jobs' in vhost 'orders'", as the broker's errors name a queue. */
  #queueText(name: string): string {
    return resourceName('queue', name, this.#context.vhost);
  }

  #reportError(error: unknown, source: ErrorSource, queue?: string): void {
    reportError(this.#context.onError, error, source, queue);
  }

  #checkDamaged(name: string): void {
    const error = this.#context.damaged.errorOf(name);
    if (error) throw error;
  }

  /** Runs `task` after every structural operation before it. */
  #serialized<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#operations.then(task);
    this.#operations = run.catch(() => {});
    return run;
  }
}

/** A redeclare or passive declare counts as use: it restarts a classic queue's `x-expires`. */
function touch(queue: AnyQueue): void {
  if ('touch' in queue) queue.touch();
}

/**
 * A quorum queue refuses if-unused and if-empty deletes, as RabbitMQ's do (3.10 and 4.x).
 * @throws NotImplementedError (540) in RabbitMQ's words.
 */
function checkQuorumDelete(queue: string, options: DeleteQueueOptions): void {
  const flag = options.ifUnused ? 'if-unused' : options.ifEmpty ? 'if-empty' : undefined;
  if (flag === undefined) return;
  throw new NotImplementedError(
    `cannot delete ${queue}. queue.delete operations with ${flag} flag set are not supported by quorum queues`,
  );
}
