// Building the page: elements from text only (names, arguments and message bodies come from
// clients; none is ever parsed as HTML), and the numbers as people read them.

/**
 * An element with properties (`class`, `text`, `on*` handlers, other attributes) and children.
 * @param {string} tag
 * @param {Record<string, unknown>} [props]
 * @param {...(Node | string | number | null | undefined | false | (Node | string)[])} children
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') element.textContent = String(value);
    else if (key.startsWith('on') && typeof value === 'function')
      element.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    else element.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

/**
 * A table: `columns` are header cells, `rows` their cells; `empty` says what no rows means.
 * @param {(string | HTMLElement)[]} columns
 * @param {(Node | string | number)[][]} rows
 * @param {string} empty
 */
export function table(columns, rows, empty) {
  if (rows.length === 0) return h('p', { class: 'empty', text: empty });
  return h(
    'table',
    {},
    h(
      'thead',
      {},
      h('tr', {}, ...columns.map((c) => (typeof c === 'string' ? h('th', { text: c }) : c))),
    ),
    h('tbody', {}, ...rows.map((cells) => h('tr', {}, ...cells.map((c) => h('td', {}, c))))),
  );
}

/**
 * A list of name and value pairs.
 * @param {[string, Node | string | number][]} pairs
 */
export function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    ...pairs.flatMap(([name, value]) => [h('dt', { text: name }), h('dd', {}, value)]),
  );
}

const whole = new Intl.NumberFormat('en');
const tenths = new Intl.NumberFormat('en', { maximumFractionDigits: 1, minimumFractionDigits: 1 });

/** @param {number | undefined} n */
export const count = (n) => (n === undefined || n === null ? '–' : whole.format(n));

/** @param {number} n per second */
export const perSecond = (n) => `${tenths.format(n)}/s`;

/**
 * A rate from a `message_stats` object: `stats[key + '_details'].rate`, 0 when absent.
 * @param {Record<string, any> | undefined} stats
 * @param {string} key
 * @returns {number}
 */
export function rate(stats, key) {
  return stats?.[`${key}_details`]?.rate ?? 0;
}

/** @param {number} n bytes per second */
export function bytesPerSecond(n) {
  if (n < 1024) return `${Math.round(n)} B/s`;
  if (n < 1024 * 1024) return `${tenths.format(n / 1024)} KiB/s`;
  return `${tenths.format(n / 1024 / 1024)} MiB/s`;
}

/**
 * A table of AMQP arguments or headers, values as JSON.
 * @param {Record<string, unknown> | undefined} values
 * @param {string} empty
 */
export function argumentsTable(values, empty) {
  const rows = Object.entries(values ?? {}).map(([k, v]) => [
    h('code', { text: k }),
    h('code', { text: JSON.stringify(v) }),
  ]);
  return table(['Name', 'Value'], rows, empty);
}

/**
 * Empties `element` and puts `children` in.
 * @param {Element} element
 * @param {...(Node | string)} children
 */
export function fill(element, ...children) {
  element.replaceChildren(...children);
}

/**
 * Shows what went wrong above the page, or clears it.
 * @param {string | null} text
 */
export function problem(text) {
  const banner = /** @type {HTMLElement} */ (document.getElementById('problem'));
  banner.textContent = text ?? '';
  banner.hidden = text === null;
}

/**
 * Each part under its heading.
 * @param {[string, Node][]} parts
 */
export function titled(parts) {
  return parts.flatMap(([title, part]) => [h('h2', { text: title }), part]);
}
