/**
 * `message_stats` as RabbitMQ's API shapes it, each count with its `*_details.rate`, and the
 * depths of a queue, a vhost or the node with theirs.
 */
import type { MessageCounts } from '../server/message-counts.js';
import type { Rates } from './rates.js';

type Stats = Record<string, number | { rate: number }>;

/**
 * The stats of a queue or of a vhost's totals: `{}` when nothing was counted. Counts made anew
 * at each read (a sum over vhosts) are sampled under `name`.
 */
export function messageStats(
  counts: MessageCounts | undefined,
  rates: Rates,
  name?: string,
): Stats {
  if (counts === undefined) return {};
  const rate = name === undefined ? rates.of(counts) : rates.named(name, { ...counts });
  const stats: Stats = {};
  const put = (name: string, value: number, perSecond: number) => {
    stats[name] = value;
    stats[`${name}_details`] = { rate: perSecond };
  };
  put('publish', counts.publish, rate.publish ?? 0);
  put('deliver', counts.deliver, rate.deliver ?? 0);
  put('deliver_no_ack', counts.deliverNoAck, rate.deliverNoAck ?? 0);
  put('get', counts.get, rate.get ?? 0);
  put('get_no_ack', counts.getNoAck, rate.getNoAck ?? 0);
  put('get_empty', counts.getEmpty, rate.getEmpty ?? 0);
  put(
    'deliver_get',
    counts.deliver + counts.deliverNoAck + counts.get + counts.getNoAck,
    (rate.deliver ?? 0) + (rate.deliverNoAck ?? 0) + (rate.get ?? 0) + (rate.getNoAck ?? 0),
  );
  put('ack', counts.ack, rate.ack ?? 0);
  put('redeliver', counts.redeliver, rate.redeliver ?? 0);
  put('return_unroutable', counts.returnUnroutable, rate.returnUnroutable ?? 0);
  return stats;
}

/** An exchange's stats: what was published into it (`publish_in`). */
export function exchangeStats(counts: MessageCounts | undefined, rates: Rates): Stats {
  if (counts === undefined) return {};
  return {
    publish_in: counts.publish,
    publish_in_details: { rate: rates.of(counts).publish ?? 0 },
  };
}

/** Messages in queues: all, ready and unacknowledged. */
export interface Depths {
  readonly messages: number;
  readonly ready: number;
  readonly unacked: number;
}

/**
 * `messages`, `messages_ready` and `messages_unacknowledged`, each with its `*_details.rate`:
 * the change per second over the sample interval, sampled under `name`.
 */
export function depthStats(depths: Depths, rates: Rates, name: string) {
  const { messages, ready, unacked } = depths;
  const rate = rates.named(name, { messages, ready, unacked });
  return {
    messages,
    messages_details: { rate: rate.messages ?? 0 },
    messages_ready: ready,
    messages_ready_details: { rate: rate.ready ?? 0 },
    messages_unacknowledged: unacked,
    messages_unacknowledged_details: { rate: rate.unacked ?? 0 },
  };
}
