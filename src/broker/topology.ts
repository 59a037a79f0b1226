/**
 * A topology loaded from a file or object, config or definitions alike: the exchanges, queues,
 * bindings and policies to declare when a broker opens, and the one loader that applies them.
 * Every entry is checked against the file and against what is stored before anything is
 * declared, so a bad file declares nothing; an entry equal to what is stored is a no-op, one that
 * differs fails as its redeclare would (406), naming the file and the entry.
 */
import { InvalidConfigError, MqliteError, withContext } from '../errors.js';
import type { DestinationType, ExchangeDeclareOptions } from '../exchanges/types.js';
import type { FieldTable } from '../message/types.js';
import type { QueueDeclareOptions } from './declare-options.js';
import type { PolicyOptions } from './policies.js';
import { checkShovel } from './shovel-definition.js';

/** One exchange to declare. */
export interface TopologyExchange {
  readonly name: string;
  readonly type: string;
  readonly options: ExchangeDeclareOptions;
}

/** One queue to declare. */
export interface TopologyQueue {
  readonly name: string;
  readonly options: QueueDeclareOptions;
}

/** One binding to make: a queue or an exchange bound to the exchange `source`. */
export interface TopologyBinding {
  readonly source: string;
  readonly destination: string;
  readonly destinationType: DestinationType;
  readonly routingKey: string;
  readonly args: FieldTable;
}

/** One policy to set. */
export interface TopologyPolicy extends PolicyOptions {
  readonly name: string;
}

/** A parsed file: where it came from (for messages), and its entries in order. */
export interface Topology {
  readonly source: string;
  readonly exchanges: readonly TopologyExchange[];
  readonly queues: readonly TopologyQueue[];
  readonly bindings: readonly TopologyBinding[];
  readonly policies: readonly TopologyPolicy[];
  /** Shovels to set (a definitions file's `parameters` of component `shovel`). */
  readonly shovels?: readonly { readonly name: string; readonly value: unknown }[];
}

/** What the loader asks of the broker. */
export interface TopologyHost {
  /** Throws what declaring the queue would throw (406 for one that differs); declares nothing. */
  checkQueue(name: string, options: QueueDeclareOptions): void;
  /** Throws what declaring the exchange would throw; declares nothing. */
  checkExchange(name: string, type: string, options: ExchangeDeclareOptions): void;
  hasQueue(name: string): boolean;
  hasExchange(name: string): boolean;
  /** A queue whose stored data is damaged: left as it is (it was reported). */
  isDamaged(name: string): boolean;
  declareQueue(name: string, options: QueueDeclareOptions): Promise<unknown>;
  declareExchange(name: string, type: string, options: ExchangeDeclareOptions): Promise<unknown>;
  bind(binding: TopologyBinding): Promise<void>;
  setPolicy(name: string, policy: PolicyOptions): Promise<void>;
  setShovel(name: string, value: unknown): Promise<void>;
}

/** How a binding is named in messages. */
function bindingEntry(b: TopologyBinding): string {
  return `binding of ${b.destinationType} '${b.destination}' to exchange '${b.source}' with routing key '${b.routingKey}'`;
}

/**
 * Applies a topology: checks every entry first, then declares the exchanges, the queues, the
 * bindings and the policies, in the file's order.
 * @throws the error of the first entry that fails, of its class and code (an `MqliteError`),
 *   its message prefixed with the file and the entry.
 */
export async function applyTopology(host: TopologyHost, topology: Topology): Promise<void> {
  const inFile = (error: unknown, entry: string) => contextError(topology.source, entry, error);
  const queues = topology.queues.filter((q) => !host.isDamaged(q.name));
  const step = async (entry: string, work: () => unknown) => {
    try {
      await work();
    } catch (error) {
      throw inFile(error, entry);
    }
  };
  for (const e of topology.exchanges) {
    await step(`exchange '${e.name}'`, () => host.checkExchange(e.name, e.type, e.options));
  }
  for (const { name, value } of topology.shovels ?? []) {
    await step(`shovel '${name}'`, () => checkShovel(name, value));
  }
  for (const q of queues) {
    await step(`queue '${q.name}'`, () => host.checkQueue(q.name, q.options));
  }
  const exchanges = new Set(topology.exchanges.map((e) => e.name));
  const queueNames = new Set(topology.queues.map((q) => q.name));
  for (const b of topology.bindings) {
    const where = bindingEntry(b);
    if (!exchanges.has(b.source) && !host.hasExchange(b.source)) {
      throw inFile(new InvalidConfigError(`no exchange '${b.source}' to bind to`), where);
    }
    const declared =
      b.destinationType === 'queue'
        ? queueNames.has(b.destination) || host.hasQueue(b.destination)
        : exchanges.has(b.destination) || host.hasExchange(b.destination);
    if (!declared) {
      throw inFile(new InvalidConfigError(`no ${b.destinationType} '${b.destination}'`), where);
    }
  }
  for (const e of topology.exchanges) {
    await step(`exchange '${e.name}'`, () => host.declareExchange(e.name, e.type, e.options));
  }
  for (const q of queues) {
    await step(`queue '${q.name}'`, () => host.declareQueue(q.name, q.options));
  }
  for (const b of topology.bindings) {
    if (b.destinationType === 'queue' && host.isDamaged(b.destination)) continue;
    await step(bindingEntry(b), () => host.bind(b));
  }
  for (const { name, ...settings } of topology.policies) {
    await step(`policy '${name}'`, () => host.setPolicy(name, settings));
  }
  for (const { name, value } of topology.shovels ?? []) {
    await step(`shovel '${name}'`, () => host.setShovel(name, value));
  }
}

/**
 * The error to report for an entry of a file: an `MqliteError` keeps its class, code and reply
 * code; any other failure (a bad option's `TypeError`) becomes an `InvalidConfigError`. Either
 * way the message is prefixed with the file and the entry.
 */
export function contextError(source: string, entry: string, error: unknown): MqliteError {
  const where = `${source}: ${entry}`;
  if (error instanceof MqliteError) return withContext(error, where);
  const detail = error instanceof Error ? error.message : String(error);
  return new InvalidConfigError(`${where}: ${detail}`, { cause: error });
}
