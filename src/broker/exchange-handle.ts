/**
 * The handle `broker.exchange()` returns, shaped like `AMQPExchange` of `@cloudamqp/amqp-client`:
 * publish with a routing key, bind to and unbind from another exchange, delete. The exchange itself lives in the broker's registry; a
 * handle only names it, so a handle of a deleted exchange fails with 404 as a client's would.
 */
import type { ExchangeDeclareOptions } from '../exchanges/types.js';
import type { FieldTable, MessageProperties, PublishBody } from '../message/types.js';
import { type ExchangeRef, exchangeName } from './queue-handle.js';

/** Options of `broker.exchange()`: the declare flags and the arguments table. */
export interface ExchangeOptions extends Omit<ExchangeDeclareOptions, 'arguments'> {
  /** Exchange arguments, e.g. `{ 'alternate-exchange': 'unrouted' }`. */
  arguments?: Record<string, unknown>;
}

/** Options of `exchange.publish()`: the routing key, `mandatory`, and the message properties. */
export interface ExchangePublishOptions extends MessageProperties {
  /** Routing key (default `""`). */
  routingKey?: string;
  /**
   * Reject the publish with `NoRouteError` (312 NO_ROUTE) when no queue matches, where a broker
   * returns the message. Without it an unroutable message is dropped and counted.
   */
  mandatory?: boolean;
  /** Accepted for compatibility: a publish always resolves once stored (a confirm). */
  confirm?: boolean;
}

/** What an exchange handle asks of the broker. */
export interface ExchangeHost {
  publish(
    exchange: string,
    body: PublishBody,
    options: ExchangePublishOptions | undefined,
  ): Promise<void>;
  delete(exchange: string, options: { ifUnused?: boolean } | undefined): Promise<void>;
  bind(destination: string, source: string, routingKey: string, args: FieldTable): Promise<void>;
  unbind(destination: string, source: string, routingKey: string, args: FieldTable): Promise<void>;
}

/**
 * An exchange of a broker.
 *
 * ```ts
 * const logs = await broker.topicExchange('logs');
 * await (await broker.queue('errors')).bind(logs, '*.error');
 * await logs.publish('disk full', { routingKey: 'db.error' });
 * ```
 */
export class BrokerExchange {
  /** Exchange name. */
  readonly name: string;
  readonly #host: ExchangeHost;

  /** @internal made by `broker.exchange()`. */
  constructor(host: ExchangeHost, name: string) {
    this.#host = host;
    this.name = name;
  }

  /**
   * Publishes a message to the exchange; it reaches every queue a binding matches (or the
   * `alternate-exchange`'s). Resolves once every such queue stored it.
   * @throws NotFoundError (404) once the exchange is gone; AccessRefusedError (403) for an
   *   internal exchange; NoRouteError (312) for a `mandatory` message no queue took;
   *   QueueFullError when a target queue's `x-overflow` refuses it.
   */
  publish(body: PublishBody, options?: ExchangePublishOptions): Promise<void> {
    return this.#host.publish(this.name, body, options);
  }

  /**
   * Binds this exchange to the exchange `source`, as `exchange.bind` of `@cloudamqp/amqp-client`:
   * what `source` routes by this key (or these headers) this exchange routes on. Binding twice
   * with the same key and arguments is one binding. Resolves with this handle, for chaining.
   * @throws AccessRefusedError (403) for the default exchange; NotFoundError (404) when either
   *   exchange is missing; PreconditionFailedError (406) for an invalid headers `x-match`.
   */
  async bind(
    source: ExchangeRef,
    routingKey = '',
    args: Record<string, unknown> = {},
  ): Promise<this> {
    await this.#host.bind(this.name, exchangeName(source), routingKey, args as FieldTable);
    return this;
  }

  /**
   * Removes the binding from `source` with exactly this key and arguments; a missing one is no
   * error. An auto-delete `source` that loses its last binding is deleted.
   */
  async unbind(
    source: ExchangeRef,
    routingKey = '',
    args: Record<string, unknown> = {},
  ): Promise<this> {
    await this.#host.unbind(this.name, exchangeName(source), routingKey, args as FieldTable);
    return this;
  }

  /**
   * Deletes the exchange and its bindings (those leading to it included); a missing exchange is
   * no error.
   * @throws PreconditionFailedError (406) when `ifUnused` and it has bindings.
   */
  delete(options?: { ifUnused?: boolean }): Promise<void> {
    return this.#host.delete(this.name, options);
  }
}
