/**
 * The options of `Broker.open()`, checked before the broker takes its storage, and the config and
 * definitions files they name, read before anything is opened.
 */
import type { Clock } from '../clock.js';
import type { ErrorHandler } from '../diagnostics.js';
import { refuseUnknownKeys } from '../queues/unknown-names.js';
import type { StorageAdapter } from '../storage/types.js';
import { type BrokerConfig, loadConfig } from './config.js';
import { type Definitions, loadDefinitions } from './definitions.js';
import type { Topology } from './topology.js';

/** Options of `Broker.open()`. */
export interface BrokerOptions {
  /**
   * Where queues live: `memoryStorage()` (the default) or `fsStorage({ dir })` for durability.
   * The broker takes ownership of the adapter and closes it with itself.
   */
  storage?: StorageAdapter;
  /** Clock of every time-based rule (default: the system clock; `ManualClock` in tests). */
  clock?: Clock;
  /**
   * Exchanges, queues and bindings to declare at startup: a path to a JSON file, or the config
   * object itself (see `BrokerConfig`). What exists already must match it (406 otherwise).
   */
  config?: string | URL | BrokerConfig;
  /**
   * A RabbitMQ definitions file to load at startup (a path, or the parsed object), as
   * `rabbitmqctl export_definitions` writes it: its queues, exchanges, bindings and policies are
   * declared before `config`'s, checked against what exists as `config` is.
   */
  definitions?: string | URL | Partial<Definitions>;
  /**
   * Receives errors no caller awaits, with where they came from (`context.source`, `queue`,
   * `consumerTag`): a consumer callback that threw (whatever its ack mode), a dead letter its
   * target could not store, a timer's work that failed, and every report of damaged stored data
   * (`source: 'storage'`): a queue that could not be opened (a `CorruptionError`, see
   * `broker.damaged()`) and what recovery cut, skipped, restored or reset (a `DataLossError`).
   * Default: a process warning. Every such error is also published on the `mqlite:error`
   * diagnostics channel.
   */
  onError?: ErrorHandler;
  /**
   * Refuse what a broker would accept and ignore: a queue argument the queue's kind does not act
   * on, a consumer argument it does not know (`PreconditionFailedError` 406, naming the nearest
   * known one: "unknown argument 'x-max-lenght' for queue 'jobs' in vhost '/' (did you mean
   * 'x-max-length'?)"). Default false: unknown `x-` arguments are accepted, as brokers accept them.
   */
  strict?: boolean;
  /**
   * The virtual host this broker is, named in its errors as RabbitMQ names it ("no queue 'jobs' in
   * vhost 'orders'"), in its definitions export and its policies; a definitions file's entries
   * must be in it. Default `/`. `mqlite serve` opens each vhost's broker with its name.
   */
  vhost?: string;
}

const BROKER_OPTIONS = new Set([
  'storage',
  'clock',
  'config',
  'definitions',
  'onError',
  'strict',
  'vhost',
]);

/** Checks the options of `Broker.open()` but `storage` (see `checkStorage`). */
export function checkOptions(options: unknown): asserts options is BrokerOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('Broker.open() options must be an object');
  }
  refuseUnknownKeys(options, BROKER_OPTIONS, 'Broker option');
  const { onError, strict, vhost } = options as BrokerOptions;
  if (onError !== undefined && typeof onError !== 'function') {
    throw new TypeError('Broker option onError must be a function');
  }
  if (strict !== undefined && typeof strict !== 'boolean') {
    throw new TypeError('Broker option strict must be a boolean');
  }
  if (vhost !== undefined && (typeof vhost !== 'string' || vhost === '')) {
    throw new TypeError('Broker option vhost must be a non-empty string');
  }
}

/** The definitions, then the config, to declare once the broker opened. */
export async function loadTopologies(options: BrokerOptions): Promise<Topology[]> {
  const topologies: Topology[] = [];
  if (options.definitions !== undefined) {
    topologies.push(await loadDefinitions(options.definitions, options.vhost));
  }
  if (options.config !== undefined) topologies.push(await loadConfig(options.config));
  return topologies;
}

const STORAGE_METHODS = ['namespace', 'listNamespaces', 'deleteNamespace', 'close'] as const;

/** Checks that `storage` is a {@link StorageAdapter}, before the broker takes it. */
export function checkStorage(storage: unknown): asserts storage is StorageAdapter {
  const adapter = storage as Partial<Record<string, unknown>> | null;
  const missing =
    typeof storage !== 'object' || storage === null
      ? undefined
      : STORAGE_METHODS.find((method) => typeof adapter![method] !== 'function');
  if (typeof storage !== 'object' || storage === null || missing !== undefined) {
    const what = typeof storage === 'object' && storage !== null ? 'an object' : typeof storage;
    throw new TypeError(
      `Broker option storage must be a storage adapter (fsStorage(), memoryStorage() or a StorageAdapter with ${STORAGE_METHODS.map((m) => `${m}()`).join(', ')}), got ${what}${missing ? ` without ${missing}()` : ''}`,
    );
  }
}
