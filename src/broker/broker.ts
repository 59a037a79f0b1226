/**
 * The Broker: the queues and exchanges of one process, as a virtual host is to a broker. It
 * declares queues from AMQP arguments and exchanges by type, checks redeclarations, persists
 * declarations and bindings, routes publishes and dead letters through the exchanges, and scopes
 * exclusive queues and consumers to sessions. It offers the calls of `AMQPSessionLike` of
 * `@cloudamqp/amqp-client`, so code written against that interface runs on it unchanged.
 *
 * The class is the facade: its open queues (`OpenQueues`), its publishes (`Publisher`) and the
 * restore on open (`restoreQueues`) each live in a file of their own and share a `BrokerContext`.
 */

import { type Clock, systemClock } from '../clock.js';
import { type ErrorHandler, warnOnError } from '../diagnostics.js';
import { assertOpen, DEFAULT_VHOST } from '../errors.js';
import { Exchanges } from '../exchanges/registry.js';
import type {
  BindingInfo,
  DestinationType,
  ExchangeDeclareOptions,
  ExchangeInfo,
} from '../exchanges/types.js';
import type { FieldTable, PublishBody } from '../message/types.js';
import { memoryStorage } from '../storage/memory.js';
import type { Namespace, StorageAdapter } from '../storage/types.js';
import type { BrokerContext } from './broker-context.js';
import {
  type BrokerOptions,
  checkOptions,
  checkStorage,
  loadTopologies,
} from './broker-options.js';
import { type DamagedQueue, DamagedQueues } from './damaged-queues.js';
import type { QueueDeclareOptions } from './declare-options.js';
import { type Definitions, loadDefinitions, writeDefinitions } from './definitions.js';
import { type DelayedInfo, DelayedMessages } from './delayed-messages.js';
import {
  BrokerExchange,
  type ExchangeHost,
  type ExchangeOptions,
  type ExchangePublishOptions,
} from './exchange-handle.js';
import { ExchangeShortcuts } from './exchange-shortcuts.js';
import { OpenQueues } from './open-queues.js';
import { delaysMessages, Policies, type Policy, type PolicyOptions } from './policies.js';
import { Publisher } from './publisher.js';
import {
  asDeclared,
  type BrokerQueue,
  type DeclaredQueue,
  type DeleteQueueOptions,
} from './queue-handle.js';
import { NO_STATS, type QueueInfo, queueInfo } from './queue-info.js';
import { queueStats } from './queue-kinds.js';
import { queueStorage } from './queue-storage.js';
import { BROKER_NAMESPACE, BrokerRegistry } from './registry.js';
import { restoreQueues } from './restore.js';
import { BrokerSession, type SessionHost } from './session.js';
import type { ShovelDefinition } from './shovel-definition.js';
import type { ShovelParameter, ShovelStatus } from './shovel-host.js';
import { Shovels } from './shovel-parameters.js';
import { applyTopology, type TopologyHost } from './topology.js';

export type { BrokerOptions } from './broker-options.js';
export type { DamagedQueue } from './damaged-queues.js';
export type { DelayedInfo } from './delayed-messages.js';
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
export type { ShovelState, ShovelStatus } from './shovel-host.js';

/** Counters of the broker, as RabbitMQ's global metrics name them. */
export interface BrokerStats {
  /** Messages published to an exchange that routed them nowhere and dropped them. */
  readonly unroutableDropped: number;
  /** `mandatory` messages routed nowhere and refused with 312 NO_ROUTE. */
  readonly unroutableReturned: number;
  /**
   * Duplicates dropped, by name, of every exchange and queue declared with
   * `x-message-deduplication: true` (since the broker opened: the caches live in memory).
   */
  readonly deduplicated: {
    readonly exchanges: Readonly<Record<string, number>>;
    readonly queues: Readonly<Record<string, number>>;
  };
}

/** An exchange as `broker.exchanges()` lists it. */
export interface ExchangeStatus extends ExchangeInfo {
  /** The messages a delayed exchange holds until they are due; absent on other exchanges. */
  readonly delayed?: DelayedInfo;
}

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
 * `x-queue-type: 'stream'` → `StreamQueue`; `x-queue-type: 'quorum'` → `QuorumQueue`;
 * `qpid.last_value_queue: true` or
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
  readonly #context: BrokerContext;
  /** The broker's own namespace, holding its records. */
  readonly #namespace: Namespace;
  readonly #queues: OpenQueues;
  readonly #publisher: Publisher;
  readonly #delayed: DelayedMessages;
  readonly #shovels: Shovels;
  readonly #sessions = new Set<BrokerSession>();
  readonly #deleted: ((kind: 'queue' | 'exchange', name: string) => void)[] = [];
  #closing: Promise<void> | undefined;
  readonly #host: SessionHost = {
    declare: (name, options, owner) => this.#queues.declare(name, options, owner),
    exchange: (name, type, options) => this.exchange(name, type, options),
    deleteOwned: (owner) => this.#queues.deleteOwned(owner),
    detach: (session) => {
      this.#sessions.delete(session);
    },
  };
  readonly #exchangeHost: ExchangeHost = {
    publish: (exchange, body, options) => this.#publisher.publish(exchange, body, options),
    delete: (exchange, options) => this.deleteExchange(exchange, options),
    bind: (destination, source, key, args) => this.bindExchange(destination, source, key, args),
    unbind: (destination, source, key, args) => this.unbindExchange(destination, source, key, args),
  };

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
    this.#namespace = namespace;
    const registry = new BrokerRegistry(namespace.meta);
    const policies = new Policies(
      registry.loadPolicies((loss) => damaged.report(loss)),
      vhost,
    );
    const exchanges = Exchanges.fromJSON(registry.loadExchanges(), {
      vhost,
      // A string: the policy's check saw to it.
      alternateExchange: (name) =>
        policies.forExchange(name)?.definition['alternate-exchange'] as string | undefined,
      delayedByPolicy: (name) => delaysMessages(policies.forExchange(name)),
      hasDestination: (queue) => this.#queues.has(queue) || damaged.has(queue),
      onChange: (exchange) => {
        registry.saveExchange(exchange, exchanges.exchangeToJSON(exchange));
        this.#delayed.changed(exchange);
        if (!exchanges.has(exchange)) this.#context.deleted('exchange', exchange);
      },
    });
    this.#context = {
      storage,
      queueStorage: queueStorage(storage, registry),
      clock,
      registry,
      exchanges,
      policies,
      damaged,
      onError,
      strict,
      vhost,
      closed: () => this.closed,
      deleted: (kind, name) => {
        for (let i = 0; i < this.#deleted.length; i++) this.#deleted[i]!(kind, name);
      },
    };
    this.#queues = new OpenQueues(this.#context, (exchange, body, options) =>
      this.#publisher.publish(exchange, body, options),
    );
    this.#delayed = new DelayedMessages(this.#context, namespace, (exchange, message) =>
      this.#publisher.routeDue(exchange, message),
    );
    this.#publisher = new Publisher(this.#context, this.#queues, this.#delayed);
    this.#shovels = new Shovels(registry, this, clock, (loss) => damaged.report(loss));
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
      await storage.open?.();
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
      await restoreQueues(broker.#queues, broker.#context);
      await broker.#delayed.restore();
      for (const topology of topologies) await applyTopology(broker.#topologyHost(), topology);
      await broker.#shovels.resume();
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
    return this.#context.vhost;
  }

  /**
   * Declares a queue, or returns the existing one (the same object) when the declaration is
   * equivalent. An empty name makes a server-named queue (`amq.gen-…`, exclusive, auto-delete
   * and non-durable unless told otherwise). `passive` only looks the queue up.
   *
   * @throws TypeError/RangeError for a malformed name or option; AccessRefusedError (403) for a
   *   new `amq.` name; NotFoundError (404) for a passive declare of a missing queue;
   *   ResourceLockedError (405) for a queue exclusive to a session; PreconditionFailedError (406)
   *   for an invalid argument, a redeclaration that differs, or a flag a quorum queue refuses.
   */
  queue<const O extends QueueDeclareOptions = Record<never, never>>(
    name = '',
    options?: O,
  ): Promise<BrokerQueue<DeclaredQueue<O>>> {
    return this.#queues.declare(name, options, this).then(asDeclared<O>);
  }

  /**
   * Declares an exchange, or checks an existing one, and returns a handle to it. A redeclare must
   * agree on type, `durable`, `autoDelete`, `internal` and `alternate-exchange` (406 naming the
   * first that differs, as RabbitMQ words it); `passive` only checks that it exists. Durable
   * exchanges (the default, as `@cloudamqp/amqp-client` declares them) and their bindings persist.
   *
   * @param type `direct`, `fanout`, `topic`, `headers` or `x-consistent-hash`, or
   *   `x-delayed-message` with the argument `x-delayed-type` naming one of them (see
   *   guides/broker.md, "Delayed messages"); anything else is 406 PRECONDITION_FAILED, as
   *   RabbitMQ 4.x refuses it.
   * @throws NotFoundError (404) for a passive declare of a missing exchange; AccessRefusedError
   *   (403) for `""` and for new `amq.` names; PreconditionFailedError (406) for a redeclare that
   *   differs, a non-string `alternate-exchange`, or a missing or unknown `x-delayed-type`.
   */
  async exchange(name: string, type: string, options?: ExchangeOptions): Promise<BrokerExchange> {
    assertOpen(this.closed, 'broker');
    this.#context.exchanges.declare(name, type, options as ExchangeDeclareOptions | undefined);
    await this.#context.registry.sync();
    await this.#delayed.ready(name);
    return new BrokerExchange(this.#exchangeHost, name);
  }

  /**
   * Deletes an exchange with its bindings; a missing one is no error, as in RabbitMQ. Exchanges
   * naming it as `alternate-exchange` keep the name (and route nowhere through it).
   * @throws PreconditionFailedError (406) when `ifUnused` and it has bindings; AccessRefusedError
   *   (403) for the default exchange and every `amq.` name, existing or not.
   */
  async deleteExchange(name: string, options: { ifUnused?: boolean } = {}): Promise<void> {
    assertOpen(this.closed, 'broker');
    if (typeof name !== 'string') throw new TypeError('exchange name must be a string');
    if (this.#context.exchanges.delete(name, options)) await this.#context.registry.sync();
  }

  /**
   * Publishes to an exchange by name, `""` being the default exchange, as an exchange handle's
   * `publish()` does (the calls of a network client, which names exchanges rather than holding
   * handles).
   */
  publish(exchange: string, body: PublishBody, options?: ExchangePublishOptions): Promise<void> {
    return this.#publisher.publish(exchange, body, options);
  }

  /**
   * @internal `publish()`, with `routed` called as soon as a message that asks for no durability
   * is held by every queue it reaches, before they deliver it (a server's publisher confirm).
   */
  publishRouted(
    exchange: string,
    body: PublishBody,
    options: ExchangePublishOptions,
    routed: () => void,
  ): Promise<void> {
    return this.#publisher.publish(exchange, body, options, routed);
  }

  /**
   * @internal Tells `listener` the name of each queue a message is stored in, whoever published
   * it (a server's per-queue `publish` counts); returns the function that stops it.
   */
  onStored(listener: (queue: string) => void): () => void {
    return this.#publisher.onStored(listener);
  }

  /**
   * @internal Tells `listener` the name of each queue and exchange that is gone, whoever deleted
   * it (a client, the management API, auto-delete, expiry); returns the function that stops it.
   */
  onDeleted(listener: (kind: 'queue' | 'exchange', name: string) => void): () => void {
    this.#deleted.push(listener);
    return () => {
      const at = this.#deleted.indexOf(listener);
      if (at >= 0) this.#deleted.splice(at, 1);
    };
  }

  /**
   * Every exchange (the default `""` and the predeclared `amq.*` ones included), by name; a
   * delayed one with how many messages it holds and when the first falls due.
   */
  exchanges(): ExchangeStatus[] {
    assertOpen(this.closed, 'broker');
    return this.#context.exchanges
      .list()
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((exchange) => {
        const delayed = this.#delayed.info(exchange.name);
        return delayed ? { ...exchange, delayed } : exchange;
      });
  }

  /** @internal The exchange of that name, or undefined: one lookup, where `exchanges()` lists all. */
  exchangeNamed(name: string): ExchangeInfo | undefined {
    assertOpen(this.closed, 'broker');
    return this.#context.exchanges.get(name);
  }

  /**
   * @internal Refuses what a publish to `exchange` would be refused for before routing: 404 when it
   * does not exist, 403 when it is internal (a transaction checks its publishes so, at once).
   */
  checkPublish(exchange: string): void {
    assertOpen(this.closed, 'broker');
    this.#context.exchanges.checkPublish(exchange);
  }

  /** @internal Whether a queue of that name exists, damaged or not: one lookup, not a listing. */
  hasQueue(name: string): boolean {
    assertOpen(this.closed, 'broker');
    return this.#queues.has(name) || this.#context.damaged.has(name);
  }

  /** The bindings leading to a queue (or an exchange), with their source (`""` not listed). */
  bindings(
    destination: string,
    destinationType: DestinationType = 'queue',
  ): { source: string; routingKey: string; args: Readonly<FieldTable> }[] {
    assertOpen(this.closed, 'broker');
    return this.#context.exchanges
      .bindingsTo(destination, destinationType)
      .map(({ source, routingKey, args }) => ({ source, routingKey, args }));
  }

  /** @internal The bindings whose source is `exchange` (none for `""` and a missing one). */
  bindingsFrom(exchange: string): BindingInfo[] {
    assertOpen(this.closed, 'broker');
    return this.#context.exchanges.bindings(exchange);
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
      this.#context.exchanges.bindExchange(destination, source, routingKey, args as FieldTable),
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
      this.#context.exchanges.unbindExchange(destination, source, routingKey, args as FieldTable),
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
      this.#context.exchanges.bindings(name).map((b) => ({ source: name, ...b })),
    );
    return writeDefinitions(
      this.queues(),
      exchanges,
      bindings,
      this.policies(),
      this.vhost,
      this.#shovels.parameters(this.vhost),
    );
  }

  /**
   * @internal Declares what RabbitMQ definitions of this broker's vhost hold (queues, exchanges,
   * bindings, policies), as `Broker.open({ definitions })` does: what the management API's
   * `POST /api/definitions` loads.
   * @throws InvalidConfigError for a malformed entry; an entry that conflicts fails with its error.
   */
  async importDefinitions(definitions: unknown): Promise<void> {
    assertOpen(this.closed, 'broker');
    await applyTopology(this.#topologyHost(), await loadDefinitions(definitions, this.vhost));
  }

  /** The broker's counters (unroutable messages). */
  stats(): BrokerStats {
    return {
      unroutableDropped: this.#publisher.unroutableDropped,
      unroutableReturned: this.#publisher.unroutableReturned,
      deduplicated: this.#publisher.deduplicated(),
    };
  }

  /**
   * Deletes a queue with its messages and consumers. Resolves with how many messages it held
   * (0 when there was no such queue, as RabbitMQ answers).
   * @throws PreconditionFailedError (406) when `ifUnused` and it has consumers, or `ifEmpty` and
   *   it holds messages.
   */
  deleteQueue(name: string, options: DeleteQueueOptions = {}): Promise<number> {
    return this.#queues.delete(name, options);
  }

  /**
   * Removes the ready messages of a queue (a stream: every segment but the one being written).
   * Resolves with how many went.
   * @throws NotFoundError (404) when there is no such queue.
   */
  async purge(name: string): Promise<number> {
    return this.#queues.existing(name).queue.purge();
  }

  /** Every queue, in name order, with its declaration and statistics. */
  queues(): QueueInfo[] {
    assertOpen(this.closed, 'broker');
    const listed = [...this.#queues.values()].map(({ declaration, queue }) =>
      queueInfo(declaration, this.#context.policies, queueStats(queue)),
    );
    for (const { declaration: d, error } of this.#context.damaged.list()) {
      if (d) listed.push({ ...queueInfo(d, this.#context.policies, NO_STATS), damaged: error });
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
    return this.#context.damaged.list();
  }

  /**
   * Sets a policy, or replaces the one of that name: on every queue (or exchange) whose name
   * `pattern` matches, it sets the limits of its `definition` at once, and on those declared
   * later. Persisted with the broker's storage. See README "Policies".
   * @throws TypeError for options of the wrong shape; PreconditionFailedError (406) for an
   *   invalid pattern, `applyTo`, priority or definition, worded as RabbitMQ words it.
   */
  setPolicy(name: string, options: PolicyOptions): Promise<void> {
    return this.#changePolicies(() =>
      this.#context.registry.savePolicy(this.#context.policies.set(name, options)),
    );
  }

  /**
   * Removes a policy: the queues it applied to go back to their declared arguments (or to the
   * next policy that matches).
   * @throws NotFoundError (404) when there is no such policy.
   */
  clearPolicy(name: string): Promise<void> {
    return this.#changePolicies(() => {
      this.#context.policies.clear(name);
      this.#context.registry.removePolicy(name);
    });
  }

  /** Every policy, in name order, in the shape of a RabbitMQ definitions file's `policies`. */
  policies(): Policy[] {
    assertOpen(this.closed, 'broker');
    return this.#context.policies.list();
  }

  /**
   * Sets a dynamic shovel, or replaces the one of that name: it moves the messages of a source
   * queue (or of an exchange) to a destination queue or exchange, of this broker (`amqp://`, no
   * host) or of another over AMQP 0-9-1, as RabbitMQ's shovel plugin does. The definition takes
   * the keys of RabbitMQ's `shovel` parameter (`src-uri`, `src-queue`, `dest-uri`, `ack-mode`,
   * ...); it is stored with the broker's storage, so a reopened broker starts it again. Resolves
   * once it is stored and starting: `shovels()` tells how it goes. See README "Shovels".
   *
   * The AMQP client (`@cloudamqp/amqp-client`) is loaded at the first shovel.
   * @throws ShovelDefinitionError (406) for a definition RabbitMQ refuses, worded as it words it.
   */
  setShovel(name: string, definition: ShovelDefinition): Promise<void> {
    return this.#whileOpen(() => this.#shovels.set(name, definition));
  }

  /**
   * Stops a shovel and deletes its definition. Messages it had taken and not yet handed on go
   * back to its source (a message confirmed by the destination and not yet acknowledged may be
   * delivered again: shovels are at-least-once).
   * @throws NotFoundError (404) when there is no such shovel.
   */
  clearShovel(name: string): Promise<void> {
    return this.#whileOpen(() => this.#shovels.clear(name, this.vhost));
  }

  /**
   * Restarts a shovel: closes both its ends (what it had taken and not acknowledged goes back to
   * the source) and starts it again from its definition.
   * @throws NotFoundError (404) when there is no such shovel.
   */
  restartShovel(name: string): Promise<void> {
    return this.#whileOpen(() => this.#shovels.restart(name, this.vhost));
  }

  /** @internal The shovels' definitions, in name order, as a definitions file's `parameters`. */
  shovelParameters(): ShovelParameter[] {
    assertOpen(this.closed, 'broker');
    return this.#shovels.parameters(this.vhost);
  }

  /** Every shovel, in name order, with its state and counts. */
  shovels(): Promise<ShovelStatus[]> {
    return this.#whileOpen(() => this.#shovels.list(this.vhost));
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

  /** Changes the policies after the operations under way, applies them to every queue, persists. */
  #changePolicies(change: () => void): Promise<void> {
    try {
      assertOpen(this.closed, 'broker');
      change();
    } catch (error) {
      return Promise.reject(error);
    }
    // An exchange a policy makes delayed (or no longer) gets (or keeps) its store.
    for (const { name } of this.#context.exchanges.list()) this.#delayed.changed(name);
    return this.#queues.applyPolicies();
  }

  #whileOpen<T>(work: () => Promise<T>): Promise<T> {
    try {
      assertOpen(this.closed, 'broker');
      return work();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async #exchangeBinding(change: () => boolean): Promise<void> {
    assertOpen(this.closed, 'broker');
    if (change()) await this.#context.registry.sync();
  }

  /** What loading a config or definitions file asks of the broker. */
  #topologyHost(): TopologyHost {
    return {
      checkQueue: (name, options) => this.#queues.check(name, options, this),
      checkExchange: (name, type, options) => this.#context.exchanges.check(name, type, options),
      hasQueue: (name) => this.hasQueue(name),
      hasExchange: (name) => this.#context.exchanges.has(name),
      isDamaged: (name) => this.#context.damaged.has(name),
      declareQueue: (name, options) => this.queue(name, options),
      declareExchange: (name, type, options) => this.exchange(name, type, options),
      bind: async (b) => {
        if (b.destinationType === 'exchange') {
          return this.bindExchange(b.destination, b.source, b.routingKey, b.args);
        }
        await this.#queues.existing(b.destination).queue.bind(b.source, b.routingKey, b.args);
      },
      setPolicy: (name, policy) => this.setPolicy(name, policy),
      setShovel: (name, value) => this.#shovels.set(name, value),
    };
  }

  async #shutdown(): Promise<void> {
    // Shovels first: what they hold goes back to its queues while those are open.
    await this.#shovels.close();
    // Let declarations and deletions under way finish first.
    await this.#queues.settled();
    await this.#delayed.close();
    for (const session of [...this.#sessions]) await session.close();
    const errors = await this.#queues.close();
    try {
      await this.#context.registry.sync();
      await this.#namespace.close();
    } finally {
      await this.#context.storage.close();
    }
    if (errors.length > 0) throw new AggregateError(errors, 'errors while closing the broker');
  }
}

function ignore(): void {}
