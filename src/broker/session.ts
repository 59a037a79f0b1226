/**
 * A session: what an AMQP connection is to a broker. Queues declared `exclusive` through it belong
 * to it, and the consumers started through its queue handles are its own. Closing it is the
 * connection going away: its consumers close (their unacknowledged messages return to their
 * queues, redelivered) and its exclusive queues are deleted. Tests use it to simulate a client
 * that disconnects.
 */
import { assertOpen } from '../errors.js';
import type { Subscription } from '../queues/consumer.js';
import type { QueueDeclareOptions } from './declare-options.js';
import type { BrokerExchange, ExchangeOptions } from './exchange-handle.js';
import { ExchangeShortcuts } from './exchange-shortcuts.js';
import { asDeclared, type BrokerQueue, type DeclaredQueue } from './queue-handle.js';

/** What a session needs from its broker. */
export interface SessionHost {
  /** Declares a queue on behalf of `owner` (which owns it when it is exclusive). */
  declare(
    name: string,
    options: QueueDeclareOptions | undefined,
    owner: object,
  ): Promise<BrokerQueue>;
  /** Declares an exchange (exchanges belong to the broker, not to a session). */
  exchange(
    name: string,
    type: string,
    options: ExchangeOptions | undefined,
  ): Promise<BrokerExchange>;
  /** Deletes every exclusive queue `owner` declared. */
  deleteOwned(owner: object): Promise<void>;
  /** The session closed. */
  detach(session: BrokerSession): void;
}

/**
 * A scope of queue declarations and consumers, made by `broker.session()`.
 *
 * ```ts
 * const session = broker.session();
 * const replies = await session.queue('', { exclusive: true }); // amq.gen-…
 * await replies.subscribe({ prefetch: 10 }, handle);
 * await session.close(); // consumers closed, unacked requeued, `replies` deleted
 * ```
 *
 * Messages taken with `get()` through a session are not tracked by it. Like the broker, a session
 * satisfies `AMQPSessionLike` of `@cloudamqp/amqp-client`.
 */
export class BrokerSession extends ExchangeShortcuts implements AsyncDisposable {
  readonly #host: SessionHost;
  readonly #subscriptions = new Set<Subscription<unknown>>();
  /** The session's handle of each queue: the queue itself, with `subscribe` tracked. */
  readonly #views = new WeakMap<BrokerQueue, BrokerQueue>();
  #closing: Promise<void> | undefined;

  /** @internal made by `broker.session()`. */
  constructor(host: SessionHost) {
    super();
    this.#host = host;
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * Declares a queue (or finds it), as `broker.queue()` does, owned by this session when
   * `exclusive`. Returns this session's handle of it: the same object for the same queue.
   */
  async queue<const O extends QueueDeclareOptions = Record<never, never>>(
    name = '',
    options?: O,
  ): Promise<BrokerQueue<DeclaredQueue<O>>> {
    assertOpen(this.closed, 'session');
    const queue = await this.#host.declare(name, options, this);
    let view = this.#views.get(queue);
    if (!view) this.#views.set(queue, (view = this.#track(queue)));
    return asDeclared<O>(view);
  }

  /** Declares an exchange, as `broker.exchange()` does. */
  async exchange(name: string, type: string, options?: ExchangeOptions): Promise<BrokerExchange> {
    assertOpen(this.closed, 'session');
    return this.#host.exchange(name, type, options);
  }

  /**
   * Closes the session as a dropped connection would: its consumers close, returning their
   * unacknowledged messages to their queues, and its exclusive queues are deleted. Idempotent.
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

  async #shutdown(): Promise<void> {
    const subscriptions = [...this.#subscriptions];
    this.#subscriptions.clear();
    for (const subscription of subscriptions) await subscription.close();
    await this.#host.deleteOwned(this);
    this.#host.detach(this);
  }

  /**
   * The queue with its `subscribe` recording the subscriptions in this session (and `bind` and
   * `unbind` resolving with this view, for chaining).
   */
  #track(queue: BrokerQueue): BrokerQueue {
    const subscribe = async (...args: unknown[]) => {
      assertOpen(this.closed, 'session');
      const subscription = await (queue.subscribe as (...a: unknown[]) => Promise<Subscription>)(
        ...args,
      );
      if (this.closed) await subscription.close();
      else this.#subscriptions.add(subscription);
      return subscription;
    };
    const chained =
      (call: 'bind' | 'unbind') =>
      async (...args: Parameters<BrokerQueue['bind']>) => {
        await queue[call](...args);
        return view;
      };
    const overridden = new Map<PropertyKey, unknown>([
      ['bind', chained('bind')],
      ['unbind', chained('unbind')],
    ]);
    /** Methods bound to the queue, with the function each was bound from. */
    const bound = new Map<PropertyKey, { from: unknown; method: unknown }>();
    const view = new Proxy(queue, {
      get(target, property) {
        if (property === 'subscribe') return subscribe;
        const own = overridden.get(property);
        if (own !== undefined) return own;
        const value: unknown = Reflect.get(target, property, target);
        if (typeof value !== 'function') return value;
        // Methods run on the queue itself: its private fields are not reachable via a proxy.
        // A deleted queue's handle gets other methods (see `redirectDeleted`): bind those anew.
        let entry = bound.get(property);
        if (entry?.from !== value)
          bound.set(property, (entry = { from: value, method: value.bind(target) }));
        return entry.method;
      },
    });
    return view;
  }
}
