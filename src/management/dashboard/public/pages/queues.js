// Every queue with its depth, consumers and rates: sorted by a column, filtered by name.
import { api, part } from '../api.js';
import { count, fill, h, perSecond, rate } from '../dom.js';

/** @typedef {{ label: string, value: (q: any) => string | number, show?: (q: any) => Node | string, numeric?: boolean }} Column */

/** @type {Column[]} */
const COLUMNS = [
  { label: 'Virtual host', value: (q) => q.vhost },
  {
    label: 'Name',
    value: (q) => q.name,
    show: (q) => h('a', { href: `#/queues/${part(q.vhost)}/${part(q.name)}`, text: q.name }),
  },
  { label: 'Type', value: (q) => q.type ?? 'classic' },
  { label: 'Messages', value: (q) => q.messages ?? 0, numeric: true },
  { label: 'Ready', value: (q) => q.messages_ready ?? 0, numeric: true },
  { label: 'Unacked', value: (q) => q.messages_unacknowledged ?? 0, numeric: true },
  { label: 'Consumers', value: (q) => q.consumers ?? 0, numeric: true },
  { label: 'Publish', value: (q) => rate(q.message_stats, 'publish'), numeric: true },
  { label: 'Deliver / get', value: (q) => rate(q.message_stats, 'deliver_get'), numeric: true },
  { label: 'Ack', value: (q) => rate(q.message_stats, 'ack'), numeric: true },
];
const RATE_FROM = 7;

export function queuesPage() {
  /** @type {any[]} */
  let queues = [];
  let sortBy = 1;
  let descending = false;
  const filter = h('input', {
    type: 'search',
    placeholder: 'Filter by name',
    'aria-label': 'Filter queues by name',
    oninput: () => render(),
  });
  const summary = h('span', { class: 'summary' });
  const body = h('div');
  const element = h(
    'section',
    {},
    h('h1', { text: 'Queues' }),
    h('div', { class: 'toolbar' }, filter, summary),
    body,
  );

  function render() {
    const needle = /** @type {HTMLInputElement} */ (filter).value.trim().toLowerCase();
    const shown = queues.filter((q) => q.name.toLowerCase().includes(needle));
    const column = COLUMNS[sortBy];
    const order = descending ? -1 : 1;
    shown.sort((a, b) => {
      const x = column.value(a);
      const y = column.value(b);
      return (x < y ? -1 : x > y ? 1 : 0) * order || a.name.localeCompare(b.name);
    });
    summary.textContent = `${shown.length} of ${queues.length} queues`;
    const head = COLUMNS.map((c, i) =>
      h(
        'th',
        {
          class: c.numeric ? 'numeric' : undefined,
          'aria-sort': i === sortBy ? (descending ? 'descending' : 'ascending') : undefined,
        },
        h('button', {
          type: 'button',
          class: 'sort',
          text: c.label,
          onclick: () => {
            descending = sortBy === i ? !descending : Boolean(c.numeric);
            sortBy = i;
            render();
          },
        }),
      ),
    );
    const rows = shown.map((q) =>
      h(
        'tr',
        { 'data-queue': q.name },
        ...COLUMNS.map((c, i) =>
          h(
            'td',
            { class: c.numeric ? 'numeric' : undefined, 'data-column': c.label },
            c.show
              ? c.show(q)
              : i >= RATE_FROM
                ? perSecond(Number(c.value(q)))
                : c.numeric
                  ? count(Number(c.value(q)))
                  : c.value(q),
          ),
        ),
      ),
    );
    fill(
      body,
      queues.length === 0
        ? h('p', { class: 'empty', text: 'No queues.' })
        : h(
            'table',
            { class: 'queues' },
            h('thead', {}, h('tr', {}, ...head)),
            h('tbody', {}, ...rows),
          ),
    );
  }

  return {
    title: 'Queues',
    nav: 'queues',
    element,
    refresh: async () => {
      queues = await api('/queues');
      render();
    },
  };
}
