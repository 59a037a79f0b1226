/**
 * The topology a broker declares at startup from a JSON config, as the Qpid broker reads its
 * virtual-host config. Queues take the options `broker.queue()` takes — flags, `arguments`,
 * camelCase sugar — with a `type` that may also say `lvq` or `priority`, and may bind themselves
 * to an exchange (the routing key defaults to the queue's name, as in Qpid); exchanges and
 * bindings have sections of their own:
 *
 * ```json
 * {
 *   "exchanges": { "logs": { "type": "topic" } },
 *   "queues": {
 *     "prices": { "type": "lvq", "lvqKey": "ISIN", "exchange": "amq.direct" },
 *     "errors": {},
 *     "events": { "type": "stream", "maxAge": "7D" }
 *   },
 *   "bindings": [{ "source": "logs", "destination": "errors", "routingKey": "*.error" }]
 * }
 * ```
 *
 * `queues` and `exchanges` may also be arrays of entries with a `name`. Any error names the
 * config, the entry and the field, and keeps the code of the underlying error.
 */
import type { ExchangeDeclareOptions, ExchangeType } from '../exchanges/types.js';
import type { FieldTable } from '../message/types.js';
import type { QueueDeclareOptions } from './declare-options.js';
import type { Topology, TopologyBinding, TopologyExchange, TopologyQueue } from './topology.js';
import { EntryFields, namedEntries, readTopologyFile, refuseDuplicates } from './topology-file.js';

/** The options of one queue in a config: those of `broker.queue()` except `passive`. */
export type QueueConfig = Omit<QueueDeclareOptions, 'passive' | 'type'> & {
  /** `classic` (default), `stream`, `lvq` (same as `lvq: true`) or `priority` (needs `maxPriority`). */
  type?: 'classic' | 'stream' | 'lvq' | 'priority';
  /** An exchange to bind the queue to, as a Qpid virtual-host config binds it. */
  exchange?: string;
  /** The routing key of that binding (default: the queue's name). */
  routingKey?: string;
};

/** One exchange in a config: its type and the options of `broker.exchange()`. */
export interface ExchangeConfig {
  type: ExchangeType;
  durable?: boolean;
  autoDelete?: boolean;
  internal?: boolean;
  arguments?: Record<string, unknown>;
}

/** One binding in a config: a queue (or, with `destinationType`, an exchange) to an exchange. */
export interface BindingConfig {
  source: string;
  destination: string;
  /** `queue` (default) or `exchange`. */
  destinationType?: 'queue' | 'exchange';
  routingKey?: string;
  arguments?: Record<string, unknown>;
}

/** A broker config: the exchanges, queues and bindings to declare when the broker opens. */
export interface BrokerConfig {
  exchanges?: Record<string, ExchangeConfig> | (ExchangeConfig & { name: string })[];
  queues?: Record<string, QueueConfig> | (QueueConfig & { name: string })[];
  bindings?: BindingConfig[];
}

const SECTIONS = ['exchanges', 'queues', 'bindings'];
const EXCHANGE_FIELDS = ['name', 'type', 'durable', 'autoDelete', 'internal', 'arguments'];
const BINDING_FIELDS = ['source', 'destination', 'destinationType', 'routingKey', 'arguments'];

/**
 * Reads a config from a JSON file path or takes it as an object. Option values are checked when
 * declared.
 * @throws InvalidConfigError for a malformed config (not JSON, wrong shape), naming the file,
 *   the entry and the field.
 */
export async function loadConfig(config: string | URL | BrokerConfig): Promise<Topology> {
  const { source, value } = await readTopologyFile(config, 'config');
  const top = new EntryFields(source, value);
  for (const key of top.keys()) {
    if (!SECTIONS.includes(key)) throw top.error(`unknown key '${key}'`);
  }
  const exchangeEntries = namedEntries(source, 'exchanges', value.exchanges, true);
  const queueEntries = namedEntries(source, 'queues', value.queues, true);
  refuseDuplicates(exchangeEntries);
  refuseDuplicates(queueEntries);
  const exchanges = exchangeEntries.map(([name, entry, where]) => exchange(name, entry, where));
  const queues: TopologyQueue[] = [];
  const bindings: TopologyBinding[] = [];
  for (const [name, entry, where] of queueEntries) {
    const { queue: declared, binding } = queue(name, entry, where);
    queues.push(declared);
    if (binding) bindings.push(binding);
  }
  const listed = value.bindings;
  if (listed !== undefined && !Array.isArray(listed)) {
    throw top.error("'bindings' must be an array");
  }
  (listed ?? []).forEach((entry: unknown, i: number) => {
    bindings.push(binding(entry, `${source}: bindings[${i}]`));
  });
  return { source, exchanges, queues, bindings, policies: [] };
}

function exchange(name: string, entry: unknown, where: string): TopologyExchange {
  const fields = new EntryFields(where, entry);
  fields.only(EXCHANGE_FIELDS);
  const options: ExchangeDeclareOptions = {
    durable: fields.boolean('durable', true),
    autoDelete: fields.boolean('autoDelete', false),
    internal: fields.boolean('internal', false),
    arguments: fields.table('arguments') as FieldTable,
  };
  return { name, type: fields.string('type'), options };
}

function queue(
  name: string,
  entry: unknown,
  where: string,
): { queue: TopologyQueue; binding?: TopologyBinding } {
  const fields = new EntryFields(where, entry);
  if (fields.has('passive')) throw fields.error("option 'passive' has no meaning in a config");
  const { name: _name, exchange, routingKey, ...options } = entry as Record<string, unknown>;
  const declared = { name, options: typeOption(fields, options) };
  if (!fields.has('exchange')) {
    if (fields.has('routingKey')) throw fields.error("field 'routingKey' needs 'exchange'");
    return { queue: declared };
  }
  const binding: TopologyBinding = {
    source: fields.string('exchange'),
    destination: name,
    destinationType: 'queue',
    routingKey: fields.string('routingKey', name),
    args: {},
  };
  return { queue: declared, binding };
}

function binding(entry: unknown, where: string): TopologyBinding {
  const fields = new EntryFields(where, entry);
  fields.only(BINDING_FIELDS);
  const destinationType = fields.string('destinationType', 'queue');
  if (destinationType !== 'queue' && destinationType !== 'exchange') {
    throw fields.error(
      `field 'destinationType' must be 'queue' or 'exchange', got ${JSON.stringify(destinationType)}`,
    );
  }
  return {
    source: fields.string('source'),
    destination: fields.string('destination'),
    destinationType,
    routingKey: fields.string('routingKey', ''),
    args: fields.table('arguments') as FieldTable,
  };
}

/** Turns the config-only `type` values into the options they stand for. */
function typeOption(fields: EntryFields, options: Record<string, unknown>): QueueDeclareOptions {
  const { type, ...rest } = options;
  switch (type) {
    case undefined:
    case 'classic':
    case 'stream':
      return options as QueueDeclareOptions;
    case 'lvq':
      return (rest.lvqKey === undefined ? { ...rest, lvq: true } : rest) as QueueDeclareOptions;
    case 'priority': {
      const args = rest.arguments as Record<string, unknown> | undefined;
      if (rest.maxPriority === undefined && args?.['x-max-priority'] === undefined) {
        throw fields.error("type 'priority' needs 'maxPriority'");
      }
      return rest as QueueDeclareOptions;
    }
    default:
      throw fields.error(
        `option 'type' must be 'classic', 'stream', 'lvq' or 'priority', got ${JSON.stringify(type)}`,
      );
  }
}
