/**
 * The exchange and queue methods of one channel, as broker calls: declare, delete, bind, unbind
 * and purge, and the queue lookups of consume and get, through the connection's
 * session (so exclusive queues are the connection's). An empty queue name means the queue the
 * channel declared last, as AMQP 0-9-1 specifies. It is also what permission checks ask of the
 * channel (the queue a name means, whether a resource exists, an exchange's type).
 */

import type { Broker } from '../broker/broker.js';
import type { BrokerQueue } from '../broker/queue-handle.js';
import { queueStats } from '../broker/queue-kinds.js';
import type { BrokerSession } from '../broker/session.js';
import { NotFoundError } from '../errors.js';
import type { ExchangeInfo } from '../exchanges/types.js';
import type { PermissionScope } from './permissions.js';
import type { ArgsOf } from './wire/spec.js';

export class ChannelTopology implements PermissionScope {
  readonly #broker: Broker;
  readonly #session: BrokerSession;
  #lastQueue: string | undefined;

  constructor(broker: Broker, session: BrokerSession) {
    this.#broker = broker;
    this.#session = session;
  }

  async declareExchange(a: ArgsOf<'exchange.declare'>): Promise<void> {
    await this.#broker.exchange(a.exchange, a.type, {
      passive: a.passive,
      durable: a.durable,
      autoDelete: a.autoDelete,
      internal: a.internal,
      arguments: a.arguments,
    });
  }

  /** Deletes an exchange (`exchange.delete`). */
  deleteExchange(a: ArgsOf<'exchange.delete'>): Promise<void> {
    return this.#broker.deleteExchange(a.exchange, { ifUnused: a.ifUnused });
  }

  /** Binds an exchange to an exchange (`exchange.bind`). */
  bindExchange(a: ArgsOf<'exchange.bind'>): Promise<void> {
    return this.#broker.bindExchange(a.destination, a.source, a.routingKey, a.arguments);
  }

  /** Removes an exchange-to-exchange binding (`exchange.unbind`). */
  unbindExchange(a: ArgsOf<'exchange.unbind'>): Promise<void> {
    return this.#broker.unbindExchange(a.destination, a.source, a.routingKey, a.arguments);
  }

  /** The vhost the channel's broker is, named in errors. */
  get vhost(): string {
    return this.#broker.vhost;
  }

  /** Declares (or, passive, finds) a queue; resolves with declare-ok's arguments. */
  async declareQueue(
    a: ArgsOf<'queue.declare'>,
  ): Promise<{ queue: string; messageCount: number; consumerCount: number }> {
    const name = a.passive && a.queue === '' ? this.#lastQueueName() : a.queue;
    const queue = await this.#session.queue(
      name,
      a.passive
        ? { passive: true }
        : {
            durable: a.durable,
            exclusive: a.exclusive,
            autoDelete: a.autoDelete,
            arguments: a.arguments,
          },
    );
    this.#lastQueue = queue.name;
    const stats = queueStats(queue);
    return { queue: queue.name, messageCount: stats.messagesReady, consumerCount: stats.consumers };
  }

  /** Binds a queue to an exchange (`queue.bind`). */
  async bindQueue(a: ArgsOf<'queue.bind'>): Promise<void> {
    const queue = await this.queue(a.queue);
    await queue.bind(a.exchange, a.routingKey, a.arguments);
  }

  /** Removes a queue's binding (`queue.unbind`). */
  async unbindQueue(a: ArgsOf<'queue.unbind'>): Promise<void> {
    const queue = await this.queue(a.queue);
    await queue.unbind(a.exchange, a.routingKey, a.arguments);
  }

  /** Purges a queue (`queue.purge`); resolves with how many messages it removed. */
  async purgeQueue(a: ArgsOf<'queue.purge'>): Promise<number> {
    const queue = await this.queue(a.queue);
    return queue.purge();
  }

  /** Deletes a queue; resolves with how many messages it held (0 for a missing queue). */
  async deleteQueue(a: ArgsOf<'queue.delete'>): Promise<number> {
    let queue: BrokerQueue;
    try {
      queue = await this.queue(a.queue);
    } catch (error) {
      // Deleting a queue that does not exist succeeds, as in RabbitMQ 3.10.
      if (error instanceof NotFoundError) return 0;
      throw error;
    }
    return queue.delete({ ifUnused: a.ifUnused, ifEmpty: a.ifEmpty });
  }

  /** The queue a method names. */
  queue(name: string): Promise<BrokerQueue> {
    try {
      return this.#session.queue(this.queueName(name), { passive: true });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The name of the queue a method names: `''` is the one the channel declared last. */
  queueName(name: string): string {
    return name === '' ? this.#lastQueueName() : name;
  }

  hasQueue(name: string): boolean {
    return this.#broker.hasQueue(name);
  }

  exchange(name: string): ExchangeInfo | undefined {
    return this.#broker.exchangeNamed(name);
  }

  #lastQueueName(): string {
    if (this.#lastQueue === undefined) throw new NotFoundError('no previously declared queue');
    return this.#lastQueue;
  }
}
