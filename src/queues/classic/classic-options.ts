/**
 * How a classic queue kind is opened: the options every kind's `open()` shares, their checks, and
 * the storage namespace with the arguments it was declared with. Separate from `ClassicQueue`
 * because it runs once before the queue exists; the queue itself only sees `ClassicQueueInit`.
 */

import { type Clock, systemClock } from '../../clock.js';
import type { ErrorHandler } from '../../diagnostics.js';
import { DEFAULT_VHOST, inequivalentArg, queueResource } from '../../errors.js';
import { memoryStorage } from '../../storage/memory.js';
import type { JsonValue, Namespace, StorageAdapter } from '../../storage/types.js';
import {
  CLASSIC_ARGUMENTS,
  type ClassicArguments,
  classicArgumentsDiff,
  parseClassicArguments,
} from '../arguments.js';
import { refuseUnknownArguments, refuseUnknownKeys } from '../unknown-names.js';
import type { DeadLetterRouter } from './dead-letter.js';
import type { ReadyStore } from './ready-store.js';

/** Options shared by the `open()` of every classic queue kind. */
export interface ClassicQueueOptions {
  /** Queue name. */
  readonly name: string;
  /** Where the queue lives (default: a private memory storage). */
  readonly storage?: StorageAdapter;
  /** Storage namespace of the queue (default: the queue name). */
  readonly namespace?: string;
  /** Clock for arrival times, TTL and queue expiry (default: the system clock). */
  readonly clock?: Clock;
  /** AMQP queue arguments (`x-message-ttl`, `x-max-length`, `x-dead-letter-exchange`, ...). */
  readonly arguments?: Readonly<Record<string, unknown>>;
  /**
   * Where dead-lettered messages go, by exchange and routing key (the Broker provides it).
   * Without it, dead-lettered messages are dropped.
   */
  readonly deadLetter?: DeadLetterRouter;
  /** Called once when the queue deleted itself (`x-expires`) or was deleted. */
  readonly onDelete?: (name: string) => void;
  /**
   * Receives errors nobody awaits, with where they came from: a consumer callback that threw, a
   * dead letter that could not be stored, a timer's work that failed. Default: a process warning.
   */
  readonly onError?: ErrorHandler;
  /**
   * Refuse what the queue would ignore: a queue argument it does not act on, a consumer
   * argument it does not know (406, naming the nearest known one). Default false: unknown
   * arguments are accepted, as brokers accept them.
   */
  readonly strict?: boolean;
  /** The virtual host named in the queue's errors (default `/`; the Broker passes its own). */
  readonly vhost?: string;
}

/** The option keys of every classic queue kind's `open()`. */
const CLASSIC_OPTIONS: readonly (keyof ClassicQueueOptions)[] = [
  'name',
  'storage',
  'namespace',
  'clock',
  'arguments',
  'deadLetter',
  'onDelete',
  'onError',
  'strict',
  'vhost',
];

/** What a queue kind's `open()` hands to the `ClassicQueue` constructor. */
export interface ClassicQueueInit {
  readonly name: string;
  readonly arguments: ClassicArguments;
  readonly store: ReadyStore;
  readonly storage: StorageAdapter;
  /** The queue created the storage itself and closes it with the queue. */
  readonly ownsStorage: boolean;
  readonly namespace: Namespace;
  readonly clock: Clock;
  readonly deadLetter?: DeadLetterRouter | undefined;
  readonly onDelete?: ((name: string) => void) | undefined;
  readonly onError?: ErrorHandler | undefined;
  readonly strict?: boolean | undefined;
  readonly vhost?: string | undefined;
  /**
   * Which deliveries to consumers carry `x-delivery-count`: every one (classic queues, default)
   * or only redeliveries (quorum queues, as RabbitMQ writes it). A `get` always carries it.
   */
  readonly deliveryCountHeader?: 'always' | 'redeliveries';
  /**
   * How length limits count: `classic` (default): `reject-publish` refuses a publish that would
   * pass a limit, and a requeued message counts against `drop-head`; `quorum`, as RabbitMQ's
   * quorum queues: `reject-publish` refuses once the queue went past a limit (so it takes one
   * message more) until it is back to 80% of its limits (see `PublishGate`), and a requeued
   * message drops nothing.
   */
  readonly lengthLimits?: 'classic' | 'quorum';
}

/** Metadata key of the normalized arguments a queue was declared with. */
const ARGUMENTS_KEY = 'queue.arguments';

/** The storage side of a classic queue being opened (see {@link openClassicNamespace}). */
export interface OpenedNamespace {
  readonly storage: StorageAdapter;
  readonly ownsStorage: boolean;
  readonly namespace: Namespace;
  readonly arguments: ClassicArguments;
}

/**
 * Opens the namespace of a classic queue and settles its arguments: a queue that exists keeps
 * the arguments it was declared with, and declaring it with other ones fails with 406
 * "inequivalent arg". For queue kinds' `open()`.
 */
export async function openClassicNamespace(
  options: ClassicQueueOptions,
  declared: ClassicArguments,
  known: readonly string[] = CLASSIC_ARGUMENTS,
): Promise<OpenedNamespace> {
  if (options.strict === true) {
    refuseUnknownArguments(
      options.arguments,
      known,
      'argument',
      options.name,
      options.vhost ?? DEFAULT_VHOST,
    );
  }
  const ownsStorage = options.storage === undefined;
  const storage = options.storage ?? memoryStorage();
  const namespace = await storage.namespace(options.namespace ?? options.name);
  const stored = namespace.meta.get(ARGUMENTS_KEY) as ClassicArguments | null | undefined;
  if (stored) {
    const diff = classicArgumentsDiff(stored, declared);
    if (diff !== undefined) {
      if (ownsStorage) await storage.close();
      throw inequivalentArg(diff, queueResource(options));
    }
  } else {
    namespace.meta.set(ARGUMENTS_KEY, declared as unknown as JsonValue);
  }
  return { storage, ownsStorage, namespace, arguments: declared };
}

/** What a queue kind's `open()` passes to the constructor, once its store is open. */
export function classicInit(
  options: ClassicQueueOptions,
  opened: OpenedNamespace,
  store: ReadyStore,
): ClassicQueueInit {
  return {
    name: options.name,
    ...opened,
    store,
    clock: options.clock ?? systemClock,
    deadLetter: options.deadLetter,
    onDelete: options.onDelete,
    onError: options.onError,
    strict: options.strict,
    vhost: options.vhost,
  };
}

/**
 * Checks that the options of a classic queue's `open()` are an object with a name, known keys
 * and an arguments object.
 * @param extra the option keys of this kind besides the common ones.
 */
export function checkClassicOptionKeys(
  options: ClassicQueueOptions,
  kind: string,
  extra: readonly string[],
): void {
  if (typeof options !== 'object' || options === null || typeof options.name !== 'string') {
    throw new TypeError(`${kind}.open() needs options with a name`);
  }
  refuseUnknownKeys(options, new Set([...CLASSIC_OPTIONS, ...extra]), `${kind}.open() option`);
  if (options.strict !== undefined && typeof options.strict !== 'boolean') {
    throw new TypeError(`${kind}.open() option strict must be a boolean`);
  }
  if (options.vhost !== undefined && typeof options.vhost !== 'string') {
    throw new TypeError(`${kind}.open() option vhost must be a string`);
  }
  if (
    options.arguments !== undefined &&
    (typeof options.arguments !== 'object' || options.arguments === null)
  ) {
    throw new TypeError('queue arguments must be an object');
  }
}

/**
 * Checks the common options of a classic queue's `open()` and parses its arguments.
 * @param extra the option keys of this kind besides the common ones.
 */
export function checkClassicOptions(
  options: ClassicQueueOptions,
  kind: string,
  extra: readonly string[] = [],
): ClassicArguments {
  checkClassicOptionKeys(options, kind, extra);
  return parseClassicArguments(options.arguments, queueResource(options));
}
