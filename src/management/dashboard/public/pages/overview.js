// The overview: totals, and message rates and queued messages over the last minutes.
import { History, timeChart } from '../chart.js';
import { count, fill, h, perSecond, rate, titled } from '../dom.js';

const RATES = [
  { key: 'publish', label: 'Publish', color: '#1f6f5c' },
  { key: 'deliver_get', label: 'Deliver / get', color: '#2f6fb3' },
  { key: 'ack', label: 'Ack', color: '#c07a16' },
  { key: 'redeliver', label: 'Redeliver', color: '#b33b3b' },
];
const QUEUED = [
  { key: 'messages_ready', label: 'Ready', color: '#2f6fb3' },
  { key: 'messages_unacknowledged', label: 'Unacked', color: '#c07a16' },
];

const rates = new History(RATES.length);
const queued = new History(QUEUED.length);
/** @type {any} the last answer of /api/overview */
let latest;

/**
 * Keeps one sample of /api/overview: the app reads it on every refresh, whatever the page, so
 * the charts have the minutes before the overview is opened.
 * @param {any} overview
 */
export function record(overview) {
  latest = overview;
  const now = Date.now() / 1000;
  rates.push(
    now,
    RATES.map(({ key }) => rate(overview.message_stats, key)),
  );
  queued.push(
    now,
    QUEUED.map(({ key }) => overview.queue_totals?.[key] ?? 0),
  );
}

export function overviewPage() {
  const totals = h('div', { class: 'cards' });
  const rateChart = h('div', { class: 'chart', 'data-chart': 'rates' });
  const queuedChart = h('div', { class: 'chart', 'data-chart': 'queued' });
  const element = h(
    'section',
    {},
    h('h1', { text: 'Overview' }),
    totals,
    titled([
      ['Message rates', rateChart],
      ['Queued messages', queuedChart],
    ]),
  );
  /** @type {{ update(): void, destroy(): void }[]} */
  let charts = [];
  return {
    title: 'Overview',
    nav: 'overview',
    element,
    refresh: async () => {
      if (charts.length === 0)
        charts = [
          timeChart(rateChart, rates, RATES, perSecond),
          timeChart(queuedChart, queued, QUEUED, count),
        ];
      for (const chart of charts) chart.update();
      rateChart.dataset.samples = String(rates.data[0].length);
      if (latest === undefined) return;
      const stats = latest.message_stats;
      const objects = latest.object_totals ?? {};
      const messages = latest.queue_totals ?? {};
      fill(
        totals,
        card(
          'Messages',
          count(messages.messages),
          `${count(messages.messages_ready)} ready, ${count(messages.messages_unacknowledged)} unacked`,
          'messages',
        ),
        card(
          'Publish',
          perSecond(rate(stats, 'publish')),
          `${count(stats?.publish ?? 0)} in all`,
          'publish-rate',
        ),
        card(
          'Deliver / get',
          perSecond(rate(stats, 'deliver_get')),
          `${count(stats?.deliver_get ?? 0)} in all`,
          'deliver-rate',
        ),
        card('Ack', perSecond(rate(stats, 'ack')), `${count(stats?.ack ?? 0)} in all`, 'ack-rate'),
        card('Queues', count(objects.queues), `${count(objects.exchanges)} exchanges`, 'queues'),
        card(
          'Connections',
          count(objects.connections),
          `${count(objects.channels)} channels`,
          'connections',
        ),
        card('Consumers', count(objects.consumers), '', 'consumers'),
      );
    },
    destroy: () => {
      for (const chart of charts) chart.destroy();
    },
  };
}

/**
 * @param {string} label
 * @param {string} value
 * @param {string} detail
 * @param {string} name for tests and styles
 */
function card(label, value, detail, name) {
  return h(
    'div',
    { class: 'card', 'data-card': name },
    h('div', { class: 'label', text: label }),
    h('div', { class: 'value', text: value }),
    h('div', { class: 'detail', text: detail }),
  );
}
