/**
 * Counters of the messages a server's clients publish, take and acknowledge, per vhost, per
 * queue and per exchange: what the management API reports as `message_stats` and Prometheus as
 * `rabbitmq_global_messages_*_total`. Kept where the work happens, as plain increments of an
 * object the channel already holds; rates are computed by whoever samples them.
 */

/** Message counts, named as RabbitMQ's `message_stats` fields. */
export class MessageCounts {
  publish = 0;
  deliver = 0;
  deliverNoAck = 0;
  get = 0;
  getNoAck = 0;
  getEmpty = 0;
  ack = 0;
  redeliver = 0;
  returnUnroutable = 0;
}

/** The counts of one vhost: its totals, and per queue and exchange. */
export class VhostCounts {
  readonly totals = new MessageCounts();
  readonly #queues = new Map<string, MessageCounts>();
  readonly #exchanges = new Map<string, MessageCounts>();

  /** The counts of a queue, made on first use. */
  queue(name: string): MessageCounts {
    let counts = this.#queues.get(name);
    if (counts === undefined) this.#queues.set(name, (counts = new MessageCounts()));
    return counts;
  }

  /** The counts of an exchange (its `publish` is RabbitMQ's `publish_in`), made on first use. */
  exchange(name: string): MessageCounts {
    let counts = this.#exchanges.get(name);
    if (counts === undefined) this.#exchanges.set(name, (counts = new MessageCounts()));
    return counts;
  }

  /** The counts of a queue or exchange, if it had any. */
  counted(kind: 'queue' | 'exchange', name: string): MessageCounts | undefined {
    return (kind === 'queue' ? this.#queues : this.#exchanges).get(name);
  }

  /** Forgets a deleted queue's or exchange's counts: one declared again starts from 0. */
  forget(kind: 'queue' | 'exchange', name: string): void {
    (kind === 'queue' ? this.#queues : this.#exchanges).delete(name);
  }
}
