// One queue: its state, arguments, bindings and consumers, and a peek at its first messages
// through the API's get that requeues them.
import { api, part } from '../api.js';
import { argumentsTable, count, facts, fill, h, perSecond, rate, table, titled } from '../dom.js';

/**
 * @param {string} vhost
 * @param {string} name
 */
export function queuePage(vhost, name) {
  const path = `/queues/${part(vhost)}/${part(name)}`;
  const summary = h('div');
  const args = h('div');
  const bindings = h('div');
  const consumers = h('div');
  const peeked = h('div', { class: 'peeked' });
  const howMany = h('input', {
    type: 'number',
    min: '1',
    max: '100',
    value: '5',
    'aria-label': 'How many messages',
  });
  const peekButton = h('button', { type: 'submit', text: 'Peek' });
  const peek = h(
    'form',
    {
      class: 'toolbar',
      onsubmit: async (/** @type {Event} */ event) => {
        event.preventDefault();
        peekButton.setAttribute('disabled', '');
        try {
          const count = Number(/** @type {HTMLInputElement} */ (howMany).value) || 1;
          const messages = await api(`${path}/get`, {
            method: 'POST',
            body: { count, ackmode: 'ack_requeue_true', encoding: 'auto', truncate: 50000 },
          });
          fill(
            peeked,
            ...(messages.length === 0
              ? [h('p', { class: 'empty', text: 'The queue is empty.' })]
              : messages.map(message)),
          );
        } catch (error) {
          fill(
            peeked,
            h('p', {
              class: 'error',
              text: String(error instanceof Error ? error.message : error),
            }),
          );
        } finally {
          peekButton.removeAttribute('disabled');
        }
      },
    },
    h('label', {}, 'Messages ', howMany),
    peekButton,
    h('span', { class: 'hint', text: 'Peeked messages go back to the queue, marked redelivered.' }),
  );
  const element = h(
    'section',
    {},
    h(
      'p',
      { class: 'crumbs' },
      h('a', { href: '#/queues', text: 'Queues' }),
      ` · virtual host ${vhost}`,
    ),
    h('h1', { text: name }),
    summary,
    titled([
      ['Arguments', args],
      ['Bindings', bindings],
      ['Consumers', consumers],
      ['Peek', h('div', {}, peek, peeked)],
    ]),
  );

  return {
    title: name,
    nav: 'queues',
    element,
    refresh: async () => {
      const [queue, bound, all] = await Promise.all([
        api(path),
        api(`${path}/bindings`),
        api(`/consumers/${part(vhost)}`),
      ]);
      const stats = queue.message_stats;
      fill(
        summary,
        facts([
          ['Type', queue.type ?? 'classic'],
          ['Features', features(queue)],
          ['Policy', queue.policy || '–'],
          ['Messages', h('span', { 'data-fact': 'messages', text: count(queue.messages) })],
          ['Ready', count(queue.messages_ready)],
          ['Unacked', count(queue.messages_unacknowledged)],
          ['Consumers', count(queue.consumers)],
          ['Publish', perSecond(rate(stats, 'publish'))],
          ['Deliver / get', perSecond(rate(stats, 'deliver_get'))],
          ['Ack', perSecond(rate(stats, 'ack'))],
        ]),
      );
      fill(args, argumentsTable(queue.arguments, 'No arguments.'));
      fill(
        bindings,
        table(
          ['From exchange', 'Routing key', 'Arguments'],
          bound.map((/** @type {any} */ b) => [
            b.source === '' ? '(default exchange)' : b.source,
            h('code', { text: b.routing_key }),
            h('code', {
              text: Object.keys(b.arguments ?? {}).length === 0 ? '' : JSON.stringify(b.arguments),
            }),
          ]),
          'No bindings.',
        ),
      );
      const mine = all.filter((/** @type {any} */ c) => c.queue?.name === name);
      fill(
        consumers,
        table(
          ['Consumer tag', 'Channel', 'Ack required', 'Prefetch', 'Exclusive', 'Active'],
          mine.map((/** @type {any} */ c) => [
            h('code', { text: c.consumer_tag }),
            c.channel_details?.name ?? '',
            yesNo(c.ack_required),
            count(c.prefetch_count),
            yesNo(c.exclusive),
            yesNo(c.active ?? true),
          ]),
          'No consumers.',
        ),
      );
    },
  };
}

/** @param {any} queue */
function features(queue) {
  const list = [
    queue.durable && 'durable',
    queue.auto_delete && 'auto-delete',
    queue.exclusive && 'exclusive',
  ].filter(Boolean);
  return list.length === 0 ? '–' : list.join(', ');
}

/** @param {unknown} value */
const yesNo = (value) => (value ? 'yes' : 'no');

/**
 * One peeked message: its body as text (or base64 when it is not), where it came from, its
 * properties.
 * @param {any} m
 */
function message(m) {
  const { headers, ...properties } = m.properties ?? {};
  return h(
    'article',
    { class: 'message' },
    facts([
      ['Exchange', m.exchange === '' ? '(default exchange)' : m.exchange],
      ['Routing key', h('code', { text: m.routing_key })],
      ['Redelivered', yesNo(m.redelivered)],
      [
        'Size',
        `${count(m.payload_bytes)} bytes${m.payload_encoding === 'base64' ? ', shown in base64' : ''}`,
      ],
    ]),
    Object.keys(properties).length > 0 ? argumentsTable(properties, '') : null,
    headers && Object.keys(headers).length > 0
      ? h('div', {}, h('h3', { text: 'Headers' }), argumentsTable(headers, ''))
      : null,
    h('pre', { class: 'payload', text: m.payload }),
  );
}
