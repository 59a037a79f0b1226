/**
 * RabbitMQ's definitions file, the one `rabbitmqctl export_definitions` writes and
 * `import_definitions` reads (and the management API's `/api/definitions`, and LavinMQ's):
 * `queues`, `exchanges`, `bindings` and `policies` of each vhost, with `vhosts`, `users` and
 * `permissions` for the server. A broker is one vhost (`/` unless its `vhost` option names
 * another): entries of another vhost are refused, naming the entry. Of the `parameters`, those of
 * component `shovel` are the broker's shovels; users, permissions, other parameters and the vhost
 * list are accepted and ignored (the server reads users and permissions itself).
 */
import { DEFAULT_VHOST } from '../errors.js';
import type { FieldTable, FieldValue } from '../message/types.js';
import type { JsonValue } from '../storage/types.js';
import { emptyTable } from '../table.js';
import type { Policy, PolicyDefinition, PolicyTarget } from './policies.js';
import type { ShovelParameter } from './shovel-host.js';
import type {
  Topology,
  TopologyBinding,
  TopologyExchange,
  TopologyPolicy,
  TopologyQueue,
} from './topology.js';
import { EntryFields, namedEntries, readTopologyFile, refuseDuplicates } from './topology-file.js';

/** A queue as a definitions file lists it. */
export interface QueueDefinition {
  name: string;
  vhost: string;
  durable: boolean;
  auto_delete: boolean;
  arguments: Record<string, JsonValue>;
  /** `classic`, `quorum` or `stream` (RabbitMQ 3.10 writes it; `x-queue-type` says the same). */
  type?: string;
}

/** An exchange as a definitions file lists it. */
export interface ExchangeDefinition {
  name: string;
  vhost: string;
  type: string;
  durable: boolean;
  auto_delete: boolean;
  /** Written by mqlite's export (RabbitMQ's leaves internal exchanges out); false when absent. */
  internal?: boolean;
  arguments: Record<string, JsonValue>;
}

/** A binding as a definitions file lists it: a queue or an exchange bound to `source`. */
export interface BindingDefinition {
  source: string;
  vhost: string;
  destination: string;
  destination_type: 'queue' | 'exchange';
  routing_key: string;
  arguments: Record<string, JsonValue>;
}

/** A definitions file, as `broker.exportDefinitions()` writes it. */
export interface Definitions {
  /** The RabbitMQ version whose format this follows (RabbitMQ writes both keys). */
  rabbit_version: string;
  rabbitmq_version: string;
  product_name: string;
  users: unknown[];
  vhosts: { name: string }[];
  permissions: unknown[];
  topic_permissions: unknown[];
  /** Runtime parameters: the broker's shovels (`component: 'shovel'`). */
  parameters: (ShovelParameter | Record<string, unknown>)[];
  global_parameters: unknown[];
  policies: Policy[];
  queues: QueueDefinition[];
  exchanges: ExchangeDefinition[];
  bindings: BindingDefinition[];
}

/** The format followed: RabbitMQ 3.10's export. */
const FORMAT_VERSION = '3.10.0';
const TOP_LEVEL = [
  'rabbit_version',
  'rabbitmq_version',
  'lavinmq_version',
  'product_name',
  'product_version',
  'users',
  'vhosts',
  'permissions',
  'topic_permissions',
  'parameters',
  'global_parameters',
  'policies',
  'queues',
  'exchanges',
  'bindings',
];
/** Sections mqlite has no use for: checked to be lists, then ignored. */
const IGNORED = ['users', 'vhosts', 'permissions', 'topic_permissions', 'global_parameters'];
const QUEUE_FIELDS = ['name', 'vhost', 'durable', 'auto_delete', 'arguments', 'type'];
const EXCHANGE_FIELDS = [
  'name',
  'vhost',
  'type',
  'durable',
  'auto_delete',
  'internal',
  'arguments',
];
const BINDING_FIELDS = [
  'source',
  'vhost',
  'destination',
  'destination_type',
  'routing_key',
  'arguments',
];
const PARAMETER_FIELDS = ['vhost', 'component', 'name', 'value'];
const POLICY_FIELDS = ['name', 'vhost', 'pattern', 'apply-to', 'definition', 'priority'];
const APPLY_TO: readonly PolicyTarget[] = ['queues', 'exchanges', 'all'];

/**
 * Reads a definitions file (by path) or object into the topology it declares.
 * @param vhost the broker's vhost: the entries of any other are refused.
 * @throws InvalidConfigError for a malformed file, an entry of the wrong shape or of a vhost
 *   other than `vhost`, naming the file, the entry and the field.
 */
export async function loadDefinitions(
  definitions: unknown,
  vhost: string = DEFAULT_VHOST,
): Promise<Topology> {
  const { source, value } = await readTopologyFile(definitions, 'definitions');
  const top = new EntryFields(source, value);
  top.only(TOP_LEVEL);
  for (const section of IGNORED) {
    if (top.has(section) && !Array.isArray(top.raw(section))) {
      throw top.error(`'${section}' must be an array`);
    }
  }
  const section = (name: string) => {
    const entries = namedEntries(source, name, value[name], false);
    return entries.map(([entryName, entry, where]) => {
      const fields = new EntryFields(where, entry);
      inVhost(fields, vhost);
      return [entryName, fields, where] as const;
    });
  };
  const queueEntries = section('queues');
  const exchangeEntries = section('exchanges');
  const policyEntries = section('policies');
  refuseDuplicates(queueEntries);
  refuseDuplicates(exchangeEntries);
  refuseDuplicates(policyEntries);
  const listed = value.bindings;
  if (listed !== undefined && !Array.isArray(listed))
    throw top.error("'bindings' must be an array");
  const bindings = ((listed ?? []) as unknown[]).map((entry, i) => {
    const fields = new EntryFields(`${source}: bindings[${i}]`, entry);
    inVhost(fields, vhost);
    return binding(fields);
  });
  return {
    source,
    exchanges: exchangeEntries.map(([name, fields]) => exchange(name, fields)),
    queues: queueEntries.map(([name, fields]) => queue(name, fields)),
    bindings,
    policies: policyEntries.map(([name, fields]) => policy(name, fields)),
    shovels: shovels(top, source, vhost),
  };
}

/** The shovels among the `parameters`; parameters of other components are ignored. */
function shovels(top: EntryFields, source: string, vhost: string) {
  const listed = top.raw('parameters');
  if (listed === undefined) return [];
  if (!Array.isArray(listed)) throw top.error("'parameters' must be an array");
  const out: { name: string; value: unknown }[] = [];
  for (const [i, entry] of listed.entries()) {
    const fields = new EntryFields(`${source}: parameters[${i}]`, entry);
    if (fields.raw('component') !== 'shovel') continue;
    fields.only(PARAMETER_FIELDS);
    inVhost(fields, vhost);
    const name = fields.string('name');
    if (out.some((s) => s.name === name)) throw fields.error(`shovel '${name}' is listed twice`);
    out.push({ name, value: fields.raw('value') });
  }
  return out;
}

function inVhost(fields: EntryFields, own: string): void {
  const vhost = fields.string('vhost', own);
  if (vhost !== own) {
    throw fields.error(
      `is in vhost '${vhost}': a broker is the one vhost '${own}' (load each vhost's entries into a broker of its own)`,
    );
  }
}

function queue(name: string, fields: EntryFields): TopologyQueue {
  fields.only(QUEUE_FIELDS);
  const args = { ...fields.table('arguments') };
  const type = fields.string('type', 'classic');
  if (type !== 'classic') args['x-queue-type'] ??= type;
  return {
    name,
    options: {
      durable: fields.boolean('durable', true),
      autoDelete: fields.boolean('auto_delete', false),
      arguments: args,
    },
  };
}

function exchange(name: string, fields: EntryFields): TopologyExchange {
  fields.only(EXCHANGE_FIELDS);
  const type = fields.string('type');
  return {
    name,
    // LavinMQ exports a delayed exchange under this type, with its `x-delayed-type`.
    type: type === 'x-delayed-exchange' ? 'x-delayed-message' : type,
    options: {
      durable: fields.boolean('durable', true),
      autoDelete: fields.boolean('auto_delete', false),
      internal: fields.boolean('internal', false),
      arguments: fields.table('arguments') as FieldTable,
    },
  };
}

function binding(fields: EntryFields): TopologyBinding {
  fields.only(BINDING_FIELDS);
  const destinationType = fields.string('destination_type', 'queue');
  if (destinationType !== 'queue' && destinationType !== 'exchange') {
    throw fields.error(
      `field 'destination_type' must be 'queue' or 'exchange', got ${JSON.stringify(destinationType)}`,
    );
  }
  return {
    source: fields.string('source'),
    destination: fields.string('destination'),
    destinationType,
    routingKey: fields.string('routing_key', ''),
    args: fields.table('arguments') as FieldTable,
  };
}

function policy(name: string, fields: EntryFields): TopologyPolicy {
  fields.only(POLICY_FIELDS);
  const pattern = fields.string('pattern');
  try {
    new RegExp(pattern);
  } catch {
    throw fields.error(`field 'pattern' is not a regular expression: ${JSON.stringify(pattern)}`);
  }
  const applyTo = fields.string('apply-to', 'all');
  if (!(APPLY_TO as readonly string[]).includes(applyTo)) {
    throw fields.error(
      `field 'apply-to' must be 'queues', 'exchanges' or 'all', got ${JSON.stringify(applyTo)}`,
    );
  }
  const definition = fields.table('definition') as PolicyDefinition;
  if (Object.keys(definition).length === 0) throw fields.error("field 'definition' is empty");
  return {
    name,
    pattern,
    applyTo: applyTo as PolicyTarget,
    priority: fields.integer('priority', 0),
    definition,
  };
}

/** A queue as the export reads it (`broker.queues()` lists them so). */
export interface ExportedQueue {
  readonly name: string;
  readonly kind: string;
  readonly durable: boolean;
  readonly exclusive: boolean;
  readonly autoDelete: boolean;
  readonly arguments: Readonly<FieldTable>;
}

/** An exchange as the export reads it (`broker.exchanges()` lists them so). */
export interface ExportedExchange {
  readonly name: string;
  readonly type: string;
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly internal: boolean;
  readonly arguments: Readonly<FieldTable>;
}

/** A binding as the export reads it. */
export interface ExportedBinding {
  readonly source: string;
  readonly destination: string;
  readonly destinationType: 'queue' | 'exchange';
  readonly routingKey: string;
  readonly args: Readonly<FieldTable>;
}

/**
 * An exchange as RabbitMQ's definitions list it (and its management API shows it, with its
 * statistics besides): its arguments as plain JSON.
 */
export function exchangeDefinition(e: ExportedExchange, vhost: string): ExchangeDefinition {
  return {
    name: e.name,
    vhost,
    type: e.type,
    durable: e.durable,
    auto_delete: e.autoDelete,
    internal: e.internal,
    arguments: plainTable(e.arguments),
  };
}

/**
 * Writes a broker's topology as RabbitMQ 3.10 exports it: every queue but the exclusive ones,
 * every exchange but `""` and the `amq.` ones, every binding (but those to exclusive queues),
 * and `policies` as given, all in `vhost`. Internal exchanges are listed too (RabbitMQ leaves them
 * out, and the bindings through them would not load).
 */
export function writeDefinitions(
  queues: readonly ExportedQueue[],
  exchanges: readonly ExportedExchange[],
  bindings: readonly ExportedBinding[],
  policies: readonly Policy[],
  vhost: string,
  shovels: readonly ShovelParameter[] = [],
): Definitions {
  const exclusive = new Set(queues.filter((q) => q.exclusive).map((q) => q.name));
  return {
    rabbit_version: FORMAT_VERSION,
    rabbitmq_version: FORMAT_VERSION,
    product_name: 'mqlite',
    users: [],
    vhosts: [{ name: vhost }],
    permissions: [],
    topic_permissions: [],
    parameters: [...shovels],
    global_parameters: [],
    policies: [...policies],
    queues: queues
      .filter((q) => !q.exclusive)
      .map((q) => ({
        name: q.name,
        vhost,
        durable: q.durable,
        auto_delete: q.autoDelete,
        arguments: plainTable(q.arguments),
        type: q.kind === 'stream' || q.kind === 'quorum' ? q.kind : 'classic',
      })),
    exchanges: exchanges
      .filter((e) => e.name !== '' && !e.name.startsWith('amq.'))
      .map((e) => exchangeDefinition(e, vhost)),
    bindings: bindings
      .filter((b) => b.destinationType === 'exchange' || !exclusive.has(b.destination))
      .map((b) => ({
        source: b.source,
        vhost,
        destination: b.destination,
        destination_type: b.destinationType,
        routing_key: b.routingKey,
        arguments: plainTable(b.args),
      })),
  };
}

/** A field table as JSON writes it: 64-bit integers as numbers, bytes as base64, dates in seconds. */
function plainTable(table: Readonly<FieldTable>): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = emptyTable();
  for (const [key, value] of Object.entries(table)) {
    if (value !== undefined) out[key] = plainField(value);
  }
  return out;
}

function plainField(value: FieldValue): JsonValue {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'number':
      return value;
    case 'bigint':
      return Number(value);
  }
  if (value instanceof Date) return Math.floor(value.getTime() / 1000);
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(plainField);
  return plainTable(value as FieldTable);
}
