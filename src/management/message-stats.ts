/** `message_stats` as RabbitMQ's API shapes it: each count with its `*_details.rate`. */
import type { MessageCounts } from '../server/message-counts.js';
import type { Rates } from './rates.js';

type Stats = Record<string, number | { rate: number }>;

/** The stats of a queue or of a vhost's totals: `{}` when nothing was counted. */
export function messageStats(counts: MessageCounts | undefined, rates: Rates): Stats {
  if (counts === undefined) return {};
  const rate = rates.of(counts);
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
