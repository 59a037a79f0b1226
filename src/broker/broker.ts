/**
 * The Broker: the queues and exchanges of one process, as a virtual host is to a broker. It
 * declares queues from AMQP arguments and exchanges by type, checks redeclarations, persists
 * declarations and bindings, routes publishes and dead letters through the exchanges, and scopes
 * exclusive queues and consumers to sessions. It offers the calls of `AMQPSessionLike` of
 * `@cloudamqp/amqp-client`, so code written against that interface runs on it unchanged.
 */

import { type Clock, systemClock } from '../clock.js';
import {
  type ErrorHandler,
  type ErrorSource,
  reportError,
  type UnroutableEvent,
  unroutableChannel,
  warnOnError,
} from '../diagnostics.js';
import {
  assertOpen,
  ClosedError,
  CorruptionError,
  DataLossError,
  DEFAULT_VHOST,
  NoRouteError,
  NotFoundError,
  PreconditionFailedError,
  ResourceLockedError,
  resourceName,
} from '../errors.js';
import { Exchanges } from '../exchanges/registry.js';
import type { DestinationType, ExchangeDeclareOptions, ExchangeInfo } from '../exchanges/types.js';
import { checkGeoHeaders } from '../filters/index.js';
import { normalizeMessage } from '../message/normalize.js';
import type { FieldTable, PublishBody } from '../message/types.js';
import type { DeadLetterRouter } from '../queues/classic/dead-letter.js';
import type { Subscription } from '../queues/consumer.js';
import { refuseUnknownArguments } from '../queues/unknown-names.js';
import { memoryStorage } from '../storage/memory.js';
import type { Namespace, StorageAdapter } from '../storage/types.js';
import {
  type BrokerOptions,
  checkOptions,
  checkStorage,
  loadTopologies,
} from './broker-options.js';
import { type DamagedQueue, DamagedQueues } from './damaged-queues.js';
import { createDeadLetterRouter } from './dead-letter.js';
import {
  type Declaration,
  type QueueDeclareOptions,
  resolveDeclaration,
} from './declare-options.js';
import { type Definitions, writeDefinitions } from './definitions.js';
import { assertEquivalent } from './equivalence.js';
import {
  BrokerExchange,
  type ExchangeHost,
  type ExchangeOptions,
  type ExchangePublishOptions,
} from './exchange-handle.js';
import { ExchangeShortcuts } from './exchange-shortcuts.js';
import { Policies, type Policy, type PolicyOptions } from './policies.js';
import {
  asDeclared,
  attachBindings,
  type BrokerQueue,
  type DeclaredQueue,
  type DeletedQueueRoutes,
  type DeleteQueueOptions,
  type QueueBinder,
  redirectDeleted,
} from './queue-handle.js';
import { appliedPolicy, NO_STATS, type QueueInfo, queueInfo } from './queue-info.js';
import { type AnyQueue, KINDS, queueStats } from './queue-kinds.js';
import { checkQueueName } from './queue-name.js';
import { queueStorage } from './queue-storage.js';
import {
  BROKER_NAMESPACE,
  BrokerRegistry,
  loadOwnDeclaration,
  type StoredQueue,
  saveOwnDeclaration,
} from './registry.js';
import { deadLetterRoutingKeys, routingKeysOf, withoutBcc } from './sender-selected.js';
import { BrokerSession, type SessionHost } from './session.js';
import { applyTopology, type TopologyHost } from './topology.js';

export type { BrokerOptions } from './broker-options.js';
export type { DamagedQueue } from './damaged-queues.js';
export type {
  BrokerExchange,
  ExchangeOptions,
  ExchangePublishOptions,
} from './exchange-handle.js';
export type {
  BrokerQueue,
  DeleteQueueOptions,
  ExchangeRef,
  QueueBindings,
} from './queue-handle.js';

/** Counters of the broker, as RabbitMQ's global metrics name them. */
export interface BrokerStats {
  /** Messages published to an exchange that routed them nowhere and dropped them. */
  readonly unroutableDropped: number;
  /** `mandatory` messages routed nowhere and refused with 312 NO_ROUTE. */
  readonly unroutableReturned: number;
}

interface Entry {
  readonly declaration: Declaration;
  readonly queue: BrokerQueue;
  /** The queue's own `delete()`, run once the broker's checks passed. */
  readonly destroy: () => Promise<number>;
  /** The session (or the broker itself) an exclusive queue belongs to. */
  readonly owner: object | undefined;
}

/** Longest routing key: an AMQP short string. */
const MAX_KEY_BYTES = 255;

/**
 * An in-process broker: one virtual host of queues.
 *
 * ```ts
 * await using broker = await Broker.open();
 * const jobs = await broker.queue('jobs', { arguments: { 'x-max-priority': 9 } });
 * await jobs.publish('urgent', { priority: 9 });
 * ```
 *
 * `broker.queue(name, options)` picks the kind from the arguments as brokers spell them:
 * `x-queue-type: 'stream'` → `StreamQueue`; `qpid.last_value_queue: true` or
 * `qpid.last_value_queue_key` → `LastValueQueue` (which ignores `x-max-priority`);
 * `x-max-priority` → `PriorityQueue`; otherwise a FIFO `Queue`.
 *
 * Exchanges route as RabbitMQ's do: the default exchange `""` (routing key = queue name), and
 * `direct`, `fanout`, `topic` and `headers` exchanges declared with `broker.exchange()`, queues
 * bound with `queue.bind()`, `alternate-exchange` for what matches nothing.
 *
 * The broker satisfies `AMQPSessionLike` of `@cloudamqp/amqp-client` 4.x (its queues
 * `AMQPQueueLike`, its exchanges `AMQPExchangeLike`), so one application module runs on
 * `Broker.open()` in tests and on `AMQPSession.connect(url)` against a real broker.
 */
export class Broker extends ExchangeShortcuts implements AsyncDisposable {
  readonly #storage: StorageAdapter;
  readonly #clock: Clock;
  readonly #namespace: Namespace;
  readonly #registry: BrokerRegistry;
  /** The storage the queues get (see queue-storage.ts). */
  readonly #queueStorage: StorageAdapter;
  readonly #entries = new Map<string, Entry>();
  readonly #sessions = new Set<BrokerSession>();
  readonly #exchanges: Exchanges;
  readonly #deadLetter: DeadLetterRouter;
  #unroutableDropped = 0;
  #unroutableReturned = 0;
  /** Declarations and deletions run one at a time, so two never race on one name. */
  #operations: Promise<unknown> = Promise.resolve();
  #closing: Promise<void> | undefined;
  readonly #host: SessionHost = {
    declare: (name, options, owner) => this.#declare(name, options, owner),
    exchange: (name, type, options) => this.exchange(name, type, options),
    deleteOwned: (owner) => this.#deleteOwned(owner),
    detach: (session) => {
      this.#sessions.delete(session);
    },
  };
  readonly #binder: QueueBinder = {
    bind: (queue, exchange, routingKey, args) =>
      this.#bindings(queue, () => this.#exchanges.bind(exchange, queue, routingKey, args)),
    unbind: (queue, exchange, routingKey, args) =>
      this.#bindings(queue, () => this.#exchanges.unbind(exchange, queue, routingKey, args)),
    delete: (queue, options) => this.deleteQueue(queue, options),
  };
  readonly #deletedRoutes: DeletedQueueRoutes = {
    publish: (queue, body, properties) =>
      this.#publish('', body, { ...properties, routingKey: queue }),
    current: (queue) => this.#entry(queue).queue,
  };
  readonly #exchangeHost: ExchangeHost = {
    publish: (exchange, body, options) => this.#publish(exchange, body, options),
    delete: (exchange, options) => this.deleteExchange(exchange, options),
    bind: (destination, source, key, args) => this.bindExchange(destination, source, key, args),
    unbind: (destination, source, key, args) => this.unbindExchange(destination, source, key, args),
  };
  readonly #onError: ErrorHandler;
  readonly #strict: boolean;
  readonly #vhost: string;
  readonly #damaged: DamagedQueues;
  readonly #policies: Policies;

  private constructor(
    storage: StorageAdapter,
    clock: Clock,
    namespace: Namespace,
    damaged: DamagedQueues,
    onError: ErrorHandler,
    strict: boolean,
    vhost: string,
  ) {
    super();
    this.#storage = storage;
    this.#clock = clock;
    this.#onError = onError;
    this.#strict = strict;
    this.#vhost = vhost;
    this.#damaged = damaged;
    this.#namespace = namespace;
    this.#registry = new BrokerRegistry(namespace.meta);
    this.#queueStorage = queueStorage(storage, this.#registry);
    this.#policies = new Policies(
      this.#registry.loadPolicies((loss) => damaged.report(loss)),
      vhost,
    );
    this.#exchanges = Exchanges.fromJSON(this.#registry.loadExchanges(), {
      vhost,
      alternateExchange: (name) =>
        this.#policies.forExchange(name)?.definition['alternate-exchange'],
      hasDestination: (queue) => this.#entries.has(queue) || this.#damaged.has(queue),
      onChange: (exchange) => {
        this.#registry.saveExchange(exchange, this.#exchanges.exchangeToJSON(exchange));
      },
    });
    const exchanges = this.#exchanges;
    this.#deadLetter = createDeadLetterRouter(
      (exchange, routingKey, headers) =>
        exchanges.route(exchange, deadLetterRoutingKeys(routingKey, headers), headers),
      (name) => this.#entries.get(name)?.queue,
    );
  }

  /**
   * Opens a broker: on persistent storage every durable queue declared before comes back with
   * its messages (non-durable and exclusive ones are deleted, as at a broker restart); then what
   * `definitions` and `config` declare is declared.
   *
   * A failed open closes the storage it was given (so its directory can be opened again) and
   * throws the error that stopped it.
   *
   * @throws TypeError for bad options (a `storage` that is no `StorageAdapter`);
   *   InvalidConfigError for a malformed config or definitions file; an entry that is invalid or
   *   conflicts with what is stored fails with its error, naming the file and the entry.
   * @throws StorageError when the storage's files cannot be read or written (a full disk).
   */
  static async open(options: BrokerOptions = {}): Promise<Broker> {
    // The storage is the broker's from here: whatever fails below closes it.
    const given = typeof options === 'object' && options !== null ? options.storage : undefined;
    if (given !== undefined) checkStorage(given);
    let broker: Broker | undefined;
    try {
      checkOptions(options);
      const topologies = await loadTopologies(options);
      const storage = given ?? memoryStorage();
      const onError = options.onError ?? warnOnError;
      const damaged = new DamagedQueues(onError);
      storage.onDataLoss?.((loss) => damaged.report(loss));
      const namespace = await storage.namespace(BROKER_NAMESPACE);
      broker = new Broker(
        storage,
        options.clock ?? systemClock,
        namespace,
        damaged,
        onError,
        options.strict === true,
        options.vhost ?? DEFAULT_VHOST,
      );
      await broker.#restore();
      for (const topology of topologies) await applyTopology(broker.#topologyHost(), topology);
      return broker;
    } catch (error) {
      // The error that stopped the open is the one to see; a failure to close after it (the
      // same full disk, say) would only hide it.
      await (broker ? broker.close() : given?.close())?.catch(ignore);
      throw error;
    }
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /** The virtual host this broker is (the `vhost` option, default `/`). */
  get vhost(): string {
    return this.#vhost;
  }

  /**
   * Declares a queue, or returns the existing one (the same object) when the declaration is
   * equivalent. An empty name makes a server-named queue (`amq.gen-…`, exclusive, auto-delete
   * and non-durable unless told otherwise). `passive` only looks the queue up.
   *
   * @throws TypeError/RangeError for a malformed name or option; AccessRefusedError (403) for a
   *   new `amq.` name; NotFoundError (404) for a passive declare of a missing queue;
   *   ResourceLockedError (405) for a queue exclusive to a session; PreconditionFailedError (406)
   *   for an invalid argument or a redeclaration that differs; NotImplementedError (540) for
   *   `x-queue-type: 'quorum'`.
   */
  queue<const O extends QueueDeclareOptions = Record<never, never>>(
    name = '',
    options?: O,
  ): Promise<BrokerQueue<DeclaredQueue<O>>> {
    return this.#declare(name, options, this).then(asDeclared<O>);
  }

  /**
   * Declares an exchange, or checks an existing one, and returns a handle to it. A redeclare must
   * agree on type, `durable`, `autoDelete`, `internal` and `alternate-exchange` (406 naming the
   * first that differs, as RabbitMQ words it); `passive` only checks that it exists. Durable
   * exchanges (the default, as `@cloudamqp/amqp-client` declares them) and their bindings persist.
   *
   * @param type `direct`, `fanout`, `topic` or `headers`; anything else is 503 COMMAND_INVALID.
   * @throws NotFoundError (404) for a passive declare of a missing exchange; AccessRefusedError
   *   (403) for `""` and for new `amq.` names; PreconditionFailedError (406) for a redeclare that
   *   differs or a non-string `alternate-exchange`.
   */
  async exchange(name: string, type: string, options?: ExchangeOptions): Promise<BrokerExchange> {
    assertOpen(this.closed, 'broker');
    this.#exchanges.declare(name, type, options as ExchangeDeclareOptions | undefined);
    await this.#registry.sync();
    return new BrokerExchange(this.#exchangeHost, name);
  }

  /**
   * Deletes an exchange with its bindings; a missing one is no error, as in RabbitMQ. Exchanges
   * naming it as `alternate-exchange` keep the name (and route nowhere through it).
   * @throws PreconditionFailedError (406) when `ifUnused` and it has bindings; AccessRefusedError
   *   (403) for the default and the predeclared exchanges.
   */
  async deleteExchange(name: string, options: { ifUnused?: boolean } = {}): Promise<void> {
    assertOpen(this.closed, 'broker');
    if (typeof name !== 'string') throw new TypeError('exchange name must be a string');
    if (this.#exchanges.delete(name, options)) await this.#registry.sync();
  }

  /**
   * Publishes to an exchange by name, `""` being the default exchange, as an exchange handle's
   * `publish()` does (the calls of a network client, which names exchanges rather than holding
   * handles).
   */
  publish(exchange: string, body: PublishBody, options?: ExchangePublishOptions): Promise<void> {
    return this.#publish(exchange, body, options);
  }

  /** Every exchange (the default `""` and the predeclared `amq.*` ones included), by name. */
  exchanges(): ExchangeInfo[] {
    assertOpen(this.closed, 'broker');
    return this.#exchanges.list().sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /** The bindings leading to a queue (or an exchange), with their source (`""` not listed). */
  bindings(
    destination: string,
    destinationType: DestinationType = 'queue',
  ): { source: string; routingKey: string; args: Readonly<FieldTable> }[] {
    assertOpen(this.closed, 'broker');
    return this.#exchanges
      .bindingsTo(destination, destinationType)
      .map(({ source, routingKey, args }) => ({ source, routingKey, args }));
  }

  /**
   * Binds the exchange `destination` to the exchange `source` (AMQP's `exchange.bind`): what
   * `source` routes by this binding, `destination` routes on with the same keys and headers. A
   * message reaches each queue once, and a cycle of bindings ends, as in RabbitMQ.
   * @throws AccessRefusedError (403) for the default exchange; NotFoundError (404) when either
   *   exchange is missing; PreconditionFailedError (406) for an invalid headers `x-match`.
   */
  bindExchange(
    destination: string,
    source: string,
    routingKey = '',
    args: Record<string, unknown> = {},
  ): Promise<void> {
    return this.#exchangeBinding(() =>
      this.#exchanges.bindExchange(destination, source, routingKey, args as FieldTable),
    );
  }

  /**
   * Removes an exchange-to-exchange binding with exactly this key and arguments (a missing one is
   * no error); an auto-delete `source` that loses its last binding is deleted, as in RabbitMQ.
   */
  unbindExchange(
    destination: string,
    source: string,
    routingKey = '',
    args: Record<string, unknown> = {},
  ): Promise<void> {
    return this.#exchangeBinding(() =>
      this.#exchanges.unbindExchange(destination, source, routingKey, args as FieldTable),
    );
  }

  /**
   * The broker's topology in the format of RabbitMQ's definitions export (`rabbitmqctl
   * export_definitions`): `rabbitmqctl import_definitions` loads it into RabbitMQ, and
   * `Broker.open({ definitions })` into a broker. Exclusive queues are left out, as RabbitMQ
   * leaves them out.
   */
  exportDefinitions(): Definitions {
    const exchanges = this.exchanges();
    const bindings = exchanges.flatMap(({ name }) =>
      this.#exchanges.bindings(name).map((b) => ({ source: name, ...b })),
    );
    return writeDefinitions(this.queues(), exchanges, bindings, this.policies(), this.#vhost);
  }

  /** The broker's counters (unroutable messages). */
  stats(): BrokerStats {
    return {
      unroutableDropped: this.#unroutableDropped,
      unroutableReturned: this.#unroutableReturned,
    };
  }

  /**
   * Deletes a queue with its messages and consumers. Resolves with how many messages it held
   * (0 when there was no such queue, as RabbitMQ answers).
   * @throws PreconditionFailedError (406) when `ifUnused` and it has consumers, or `ifEmpty` and
   *   it holds messages.
   */
  deleteQueue(name: string, options: DeleteQueueOptions = {}): Promise<number> {
    try {
      assertOpen(this.closed, 'broker');
      return this.#delete(checkQueueName(name), options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Removes the ready messages of a queue (a stream: every segment but the one being written).
   * Resolves with how many went.
   * @throws NotFoundError (404) when there is no such queue.
   */
  async purge(name: string): Promise<number> {
    return this.#entry(name).queue.purge();
  }

  /** Every queue, in name order, with its declaration and statistics. */
  queues(): QueueInfo[] {
    assertOpen(this.closed, 'broker');
    const listed = [...this.#entries.values()].map(({ declaration, queue }) =>
      queueInfo(declaration, this.#policies, queueStats(queue)),
    );
    for (const { declaration: d, error } of this.#damaged.list()) {
      if (d) listed.push({ ...queueInfo(d, this.#policies, NO_STATS), damaged: error });
    }
    return listed.sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /**
   * The queues whose stored data could not be opened, in name order: a damaged file of theirs,
   * a missing directory, or a directory no declaration names. Each was reported through
   * `onError` when the broker opened; the other queues opened as usual. A damaged queue is
   * listed by `queues()` (when its declaration is known) with `damaged` set; declaring, binding,
   * purging or publishing to it fails with its error; `deleteQueue()` removes it with its data,
   * after which it can be declared anew.
   */
  damaged(): DamagedQueue[] {
    assertOpen(this.closed, 'broker');
    return this.#damaged.list();
  }

  /**
   * Sets a policy, or replaces the one of that name: on every queue (or exchange) whose name
   * `pattern` matches, it sets the limits of its `definition` at once, and on those declared
   * later. Persisted with the broker's storage. See README "Policies".
   * @throws TypeError for options of the wrong shape; PreconditionFailedError (406) for an
   *   invalid pattern, `applyTo`, priority or definition, worded as RabbitMQ words it.
   */
  setPolicy(name: string, options: PolicyOptions): Promise<void> {
    return this.#changePolicies(() => this.#registry.savePolicy(this.#policies.set(name, options)));
  }

  /**
   * Removes a policy: the queues it applied to go back to their declared arguments (or to the
   * next policy that matches).
   * @throws NotFoundError (404) when there is no such policy.
   */
  clearPolicy(name: string): Promise<void> {
    return this.#changePolicies(() => {
      this.#policies.clear(name);
      this.#registry.removePolicy(name);
    });
  }

  /** Every policy, in name order, in the shape of a RabbitMQ definitions file's `policies`. */
  policies(): Policy[] {
    assertOpen(this.closed, 'broker');
    return this.#policies.list();
  }

  /**
   * A new session: a scope for exclusive queues and consumers that `close()` ends as a dropped
   * connection would (see `BrokerSession`).
   */
  session(): BrokerSession {
    assertOpen(this.closed, 'broker');
    const session = new BrokerSession(this.#host);
    this.#sessions.add(session);
    return session;
  }

  /**
   * Closes every session (deleting their exclusive queues) and the broker's own exclusive
   * queues, closes every queue, and flushes and closes the storage. Idempotent; later calls on
   * the broker or its queues fail with `MQLITE_CLOSED`.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  /** `close()`, under the name `AMQPSessionLike` gives it. */
  stop(_reason?: string): Promise<void> {
    return this.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // -------------------------------------------------------------------------------------------

  #declare(
    nameArg: string,
    options: QueueDeclareOptions | undefined,
    owner: object,
  ): Promise<BrokerQueue> {
    try {
      assertOpen(this.closed, 'broker');
      const passive = options?.passive === true;
      const name = checkQueueName(nameArg, !passive, !passive);
      if (passive) return this.#serialized(async () => this.#passive(name, owner));
      const declaration = this.#resolve(name, options, nameArg !== '');
      return this.#serialized(() => this.#create(declaration, owner));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Resolves a declaration; nothing is touched. The kind's own arguments are validated only for a
   * queue to be created ({@link KINDS}' `validate`): a redeclaration is compared first.
   */
  #resolve(name: string, options: QueueDeclareOptions | undefined, named: boolean): Declaration {
    const { passive: _passive, ...declaration } = resolveDeclaration(
      name,
      options,
      named,
      this.#vhost,
    );
    if (this.#strict) {
      const { arguments: known } = KINDS[declaration.kind];
      refuseUnknownArguments(declaration.arguments, known, 'argument', name, this.#vhost);
    }
    return declaration;
  }

  #passive(name: string, owner: object): BrokerQueue {
    assertOpen(this.closed, 'broker');
    this.#checkDamaged(name);
    const entry = this.#entries.get(name);
    if (!entry) throw new NotFoundError(`no ${this.#queueText(name)}`);
    this.#checkOwner(entry, owner, undefined);
    touch(entry.queue);
    return entry.queue;
  }

  async #create(declaration: Declaration, owner: object): Promise<BrokerQueue> {
    assertOpen(this.closed, 'broker');
    this.#checkDamaged(declaration.name);
    const existing = this.#entries.get(declaration.name);
    if (existing) {
      this.#checkOwner(existing, owner, declaration.exclusive);
      assertEquivalent(existing.declaration, declaration, this.#vhost);
      touch(existing.queue);
      return existing.queue;
    }
    KINDS[declaration.kind].validate(declaration, this.#vhost);
    // Recorded (unfinished) before its storage exists, so a crash in between leaves no unlisted
    // namespace, and a declared queue without its storage only as one the next open deletes.
    this.#registry.save(declaration, true);
    await this.#registry.sync();
    let entry: Entry;
    try {
      entry = await this.#open(declaration, declaration.exclusive ? owner : undefined);
    } catch (error) {
      this.#registry.remove(declaration.name);
      await this.#registry.sync();
      throw error;
    }
    if (this.#entries.get(declaration.name) === entry) this.#registry.save(declaration);
    await this.#registry.sync();
    return entry.queue;
  }

  /** Opens a declared queue and registers it. */
  async #open(declaration: Declaration, owner: object | undefined): Promise<Entry> {
    const name = declaration.name;
    let entry: Entry | undefined;
    const queue = await KINDS[declaration.kind].open(declaration, {
      storage: this.#queueStorage,
      namespace: name,
      clock: this.#clock,
      deadLetter: this.#deadLetter,
      onDelete: () => {
        if (!entry) return;
        if (this.#entries.get(name) === entry) this.#forget(name);
        redirectDeleted(entry.queue, this.#deletedRoutes);
      },
      onError: this.#onError,
      strict: this.#strict,
      vhost: this.#vhost,
      onDataLoss: (loss) => this.#damaged.report(loss, name),
    });
    if (this.#storage.supports.persistent) {
      saveOwnDeclaration((await this.#storage.namespace(name)).meta, declaration);
    }
    const destroy = queue.delete.bind(queue);
    entry = { declaration, queue: attachBindings(queue, this.#binder), destroy, owner };
    this.#entries.set(name, entry);
    if (declaration.autoDelete) this.#deleteWhenUnused(entry);
    await this.#applyPolicy(entry);
    return entry;
  }

  #applyPolicy({ declaration: d, queue }: Entry): Promise<void> {
    return KINDS[d.kind].applyArguments(
      queue,
      appliedPolicy(this.#policies, d).arguments,
      this.#vhost,
    );
  }

  /** Changes the policies after the operations under way, applies them to every queue, persists. */
  #changePolicies(change: () => void): Promise<void> {
    try {
      assertOpen(this.closed, 'broker');
      change();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#serialized(async () => {
      await Promise.all([...this.#entries.values()].map((entry) => this.#applyPolicy(entry)));
      await this.#registry.sync();
    });
  }

  /**
   * RabbitMQ's rule for exclusive queues: only the declaring connection may use one, and a
   * redeclare must agree on exclusivity (405 otherwise).
   */
  #checkOwner(entry: Entry, owner: object, exclusive: boolean | undefined): void {
    const mismatch = exclusive !== undefined && exclusive !== entry.declaration.exclusive;
    if (mismatch || (entry.owner !== undefined && entry.owner !== owner)) {
      throw new ResourceLockedError(
        `cannot obtain exclusive access to locked ${this.#queueText(entry.declaration.name)}. It could be originally declared on another connection or the exclusive property value does not match that of the original declaration.`,
      );
    }
  }

  /** Deletes an auto-delete queue once its last consumer is gone. */
  #deleteWhenUnused(entry: Entry): void {
    const queue: AnyQueue = entry.queue;
    const subscribe = queue.subscribe.bind(queue) as (...args: unknown[]) => Promise<Subscription>;
    // Wrapping only `subscribe` of this one queue keeps every other call as fast as unwrapped.
    const tracked = async (...args: unknown[]) => {
      const subscription = await subscribe(...args);
      subscription.onCancelled(() => {
        // The queue forgets the consumer within the cancel call: look once it returned.
        queueMicrotask(() => {
          const name = entry.declaration.name;
          if (this.closed || queue.consumerCount > 0 || this.#entries.get(name) !== entry) return;
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
      if (this.#damaged.has(name)) {
        await this.#queueStorage.deleteNamespace(name);
        this.#damaged.delete(name);
        this.#forget(name);
        return 0;
      }
      const entry = this.#entries.get(name);
      if (!entry) return 0;
      const stats = queueStats(entry.queue);
      if (options.ifUnused && stats.consumers > 0) {
        throw new PreconditionFailedError(`${this.#queueText(name)} in use`);
      }
      // Unacknowledged messages do not count, as on RabbitMQ.
      if (options.ifEmpty && stats.messagesReady > 0) {
        throw new PreconditionFailedError(`${this.#queueText(name)} not empty`);
      }
      return entry.destroy();
    });
  }

  /** The queue is gone (deleted by anyone, or expired): forget it. */
  #forget(name: string): void {
    this.#entries.delete(name);
    this.#registry.remove(name);
    this.#exchanges.removeDestination(name);
    // While closing, the final sync writes it.
    if (!this.closed) {
      this.#registry.sync().catch((error: unknown) => this.#reportError(error, 'registry'));
    }
  }

  async #deleteOwned(owner: object): Promise<void> {
    const owned = [...this.#entries.values()].filter((e) => e.owner === owner);
    for (const entry of owned) await this.#delete(entry.declaration.name);
  }

  #entry(name: string): Entry {
    assertOpen(this.closed, 'broker');
    this.#checkDamaged(checkQueueName(name));
    const entry = this.#entries.get(name);
    if (!entry) throw new NotFoundError(`no ${this.#queueText(name)}`);
    return entry;
  }

  /** "queue 'jobs' in vhost 'orders'", as the broker's errors name a queue. */
  #queueText(name: string): string {
    return resourceName('queue', name, this.#vhost);
  }

  #reportError(error: unknown, source: ErrorSource, queue?: string): void {
    reportError(this.#onError, error, source, queue);
  }

  #checkDamaged(name: string): void {
    const error = this.#damaged.errorOf(name);
    if (error) throw error;
  }

  /** Runs `task` after every structural operation before it. */
  #serialized<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#operations.then(task);
    this.#operations = run.catch(() => {});
    return run;
  }

  /**
   * Reopens the stored queues; transient ones (non-durable or exclusive) are deleted, and so are
   * the bindings that led to them, as at a broker restart. A queue that cannot be opened is kept
   * apart as damaged (see `damaged()`), and a queue directory no declaration names is declared
   * again from the copy of its declaration it holds, or kept apart if it holds none.
   */
  async #restore(): Promise<void> {
    const stored = this.#registry.load();
    const onDisk = this.#storage.supports.persistent
      ? new Set(await this.#storage.listNamespaces())
      : undefined;
    onDisk?.delete(BROKER_NAMESPACE);
    for (const queue of stored) {
      const present = !onDisk || onDisk.delete(queue.name);
      await this.#restoreQueue(queue, present);
    }
    for (const name of onDisk ?? []) await this.#adoptOrphan(name);
    this.#exchanges.removeQueues((queue) => !this.#entries.has(queue) && !this.#damaged.has(queue));
    await this.#registry.sync();
  }

  async #restoreQueue(stored: StoredQueue, present: boolean): Promise<void> {
    const { name, declaration, error } = stored;
    if (!declaration) return this.#damaged.quarantine(name, undefined, error);
    // A declare or delete that never finished is undone or finished: the queue is gone.
    if (!declaration.durable || declaration.exclusive || stored.unfinished) {
      await this.#storage.deleteNamespace(name);
      this.#registry.remove(name);
      return;
    }
    if (!present) {
      return this.#damaged.quarantine(
        name,
        declaration,
        new CorruptionError(
          `the data of ${this.#queueText(name)} is missing: its directory does not exist`,
        ),
      );
    }
    try {
      await this.#open(declaration, undefined);
    } catch (cause) {
      this.#damaged.quarantine(name, declaration, cause);
    }
  }

  /** A queue directory that no stored declaration names. */
  async #adoptOrphan(name: string): Promise<void> {
    let declaration: Declaration | undefined;
    try {
      declaration = loadOwnDeclaration((await this.#storage.namespace(name)).meta, name);
    } catch (cause) {
      return this.#damaged.quarantine(name, undefined, cause);
    }
    if (!declaration) {
      return this.#damaged.quarantine(
        name,
        undefined,
        new CorruptionError(
          `queue directory '${name}' is named by no declaration in the broker's metadata and holds none of its own`,
        ),
      );
    }
    this.#damaged.report(
      new DataLossError(
        'restored',
        `${this.#queueText(name)} was missing from the broker's metadata; declared again from the copy in its directory`,
      ),
      name,
    );
    this.#registry.save(declaration);
    await this.#restoreQueue({ name, declaration, unfinished: false }, true);
  }

  async #exchangeBinding(change: () => boolean): Promise<void> {
    assertOpen(this.closed, 'broker');
    if (change()) await this.#registry.sync();
  }

  /** Runs a bind or unbind for a queue that must exist, and persists the change. */
  async #bindings(queue: string, change: () => boolean): Promise<void> {
    assertOpen(this.closed, 'broker');
    this.#checkDamaged(queue);
    if (!this.#entries.has(queue)) throw new NotFoundError(`no ${this.#queueText(queue)}`);
    if (change()) await this.#registry.sync();
  }

  /**
   * Routes a publish to an exchange: every queue it reaches stores the same normalized message
   * (one copy, one route lookup, one store call per queue).
   */
  #publish(
    exchange: string,
    body: PublishBody,
    options: ExchangePublishOptions | undefined,
  ): Promise<void> {
    try {
      assertOpen(this.closed, 'broker');
      const exchanges = this.#exchanges;
      exchanges.checkPublish(exchange);
      const routingKey = options?.routingKey ?? '';
      if (typeof routingKey !== 'string') throw new TypeError('routingKey must be a string');
      // A UTF-16 unit is at most 3 UTF-8 bytes: short keys need no byte count.
      if (routingKey.length > MAX_KEY_BYTES / 3 && Buffer.byteLength(routingKey) > MAX_KEY_BYTES) {
        throw new RangeError(`routing key is longer than ${MAX_KEY_BYTES} bytes`);
      }
      const normalized = normalizeMessage(body, options, exchange, routingKey);
      const headers = normalized.properties.headers;
      checkGeoHeaders(headers);
      const targets = exchanges.route(exchange, routingKeysOf(routingKey, headers), headers);
      const message = withoutBcc(normalized);
      if (targets.size === 0) {
        if (options?.mandatory === true) {
          this.#unroutableReturned++;
          throw new NoRouteError(
            `message published to ${resourceName('exchange', exchange, this.#vhost)} with routing key '${routingKey}' reached no queue`,
          );
        }
        this.#unroutableDropped++;
        if (unroutableChannel.hasSubscribers) {
          unroutableChannel.publish({ exchange, routingKey, message } satisfies UnroutableEvent);
        }
        return Promise.resolve();
      }
      // Bindings go with their queue (see #forget), so every target is a live or damaged entry.
      if (targets.size === 1) {
        for (const name of targets) return this.#storeIn(name, message);
      }
      const stored: Promise<void>[] = [];
      for (const name of targets) stored.push(this.#storeIn(name, message));
      return Promise.all(stored).then(ignore);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Stores a routed message in a queue; a damaged one refuses it with its error. */
  #storeIn(name: string, message: ReturnType<typeof normalizeMessage>): Promise<void> {
    const entry = this.#entries.get(name);
    if (entry) return entry.queue.publishMessage(message);
    return Promise.reject(this.#damaged.errorOf(name));
  }

  /** What loading a config or definitions file asks of the broker. */
  #topologyHost(): TopologyHost {
    return {
      checkQueue: (name, options) => {
        const declaration = this.#resolve(checkQueueName(name, false, true), options, true);
        const existing = this.#entries.get(name);
        if (!existing) return KINDS[declaration.kind].validate(declaration, this.#vhost);
        this.#checkOwner(existing, this, declaration.exclusive);
        assertEquivalent(existing.declaration, declaration, this.#vhost);
      },
      checkExchange: (name, type, options) => this.#exchanges.check(name, type, options),
      hasQueue: (name) => this.#entries.has(name) || this.#damaged.has(name),
      hasExchange: (name) => this.#exchanges.has(name),
      isDamaged: (name) => this.#damaged.has(name),
      declareQueue: (name, options) => this.queue(name, options),
      declareExchange: (name, type, options) => this.exchange(name, type, options),
      bind: async (b) => {
        if (b.destinationType === 'exchange') {
          return this.bindExchange(b.destination, b.source, b.routingKey, b.args);
        }
        await this.#entry(b.destination).queue.bind(b.source, b.routingKey, b.args);
      },
      setPolicy: (name, policy) => this.setPolicy(name, policy),
    };
  }

  async #shutdown(): Promise<void> {
    // Let declarations and deletions under way finish first.
    await this.#operations;
    for (const session of [...this.#sessions]) await session.close();
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
    try {
      await this.#registry.sync();
      await this.#namespace.close();
    } finally {
      await this.#storage.close();
    }
    if (errors.length > 0) throw new AggregateError(errors, 'errors while closing the broker');
  }
}

function ignore(): void {}

/** A redeclare or passive declare counts as use: it restarts a classic queue's `x-expires`. */
function touch(queue: AnyQueue): void {
  if ('touch' in queue) queue.touch();
}
