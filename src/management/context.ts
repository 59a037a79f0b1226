/** What every handler of the management API reads: the served state, the node, the rates. */
import { hostname } from 'node:os';
import type { Broker } from '../broker/broker.js';
import type { AmqpServer, ServedState } from '../server/server.js';
import { notFound } from './http-error.js';
import { Rates } from './rates.js';

export class ManagementContext {
  readonly state: ServedState;
  readonly server: AmqpServer;
  /** The node name, as RabbitMQ's `rabbit@host`. */
  readonly node = `mqlite@${hostname()}`;
  readonly rates: Rates;
  /** When the management listener started, on the server's clock. */
  readonly startedAt: number;

  constructor(state: ServedState, server: AmqpServer) {
    this.state = state;
    this.server = server;
    this.rates = new Rates(state.clock);
    this.startedAt = state.clock.now();
  }

  /**
   * The broker of `vhost`.
   * @throws HttpError 404 when no broker serves it.
   */
  broker(vhost: string): Broker {
    const broker = this.state.brokers.get(vhost);
    if (broker === undefined || broker.closed) throw notFound();
    return broker;
  }
}
