import type { BrokerExchange, ExchangeOptions } from './exchange-handle.js';

/**
 * The typed exchange declarations of `@cloudamqp/amqp-client`'s session, written once for the
 * broker and its sessions: each declares through `exchange()`, by default the predeclared
 * `amq.<type>` exchange.
 */
export abstract class ExchangeShortcuts {
  /** Declares an exchange, or checks an existing one, and returns a handle to it. */
  abstract exchange(name: string, type: string, options?: ExchangeOptions): Promise<BrokerExchange>;

  /** Declares a direct exchange (see `exchange()`); by default the predeclared `amq.direct`. */
  directExchange(name = 'amq.direct', options?: ExchangeOptions): Promise<BrokerExchange> {
    return this.exchange(name, 'direct', options);
  }

  /** Declares a fanout exchange (see `exchange()`); by default the predeclared `amq.fanout`. */
  fanoutExchange(name = 'amq.fanout', options?: ExchangeOptions): Promise<BrokerExchange> {
    return this.exchange(name, 'fanout', options);
  }

  /** Declares a topic exchange (see `exchange()`); by default the predeclared `amq.topic`. */
  topicExchange(name = 'amq.topic', options?: ExchangeOptions): Promise<BrokerExchange> {
    return this.exchange(name, 'topic', options);
  }

  /** Declares a headers exchange (see `exchange()`); by default the predeclared `amq.headers`. */
  headersExchange(name = 'amq.headers', options?: ExchangeOptions): Promise<BrokerExchange> {
    return this.exchange(name, 'headers', options);
  }
}
