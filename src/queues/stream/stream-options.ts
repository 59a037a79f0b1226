/**
 * How a stream is opened: the options of `StreamQueue.open()`, their checks, and the storage
 * namespace with the arguments it was declared with and its message log. Separate from
 * `StreamQueue` because it runs once before the stream exists; the stream itself only sees
 * `StreamInit`.
 */
import { type Clock, systemClock } from '../../clock.js';
import { type ErrorHandler, warnOnError } from '../../diagnostics.js';
import { type DataLossError, DEFAULT_VHOST, inequivalentArg, queueResource } from '../../errors.js';
import { messageViewCodec } from '../../message/codec.js';
import type { StoredMessage } from '../../message/types.js';
import { memoryStorage } from '../../storage/memory.js';
import type { JsonValue, Log, Namespace, StorageAdapter } from '../../storage/types.js';
import { refuseUnknownArguments, refuseUnknownKeys } from '../unknown-names.js';
import {
  parseStreamArguments,
  STREAM_ARGUMENTS,
  type StreamArguments,
  type StreamDeclaration,
  streamArgumentsDiff,
} from './arguments.js';
import { checkContinuity } from './continuity.js';

/** Options of `StreamQueue.open()`. */
export interface StreamQueueOptions extends StreamDeclaration {
  /** Queue name. */
  readonly name: string;
  /** Where the stream lives (default: a private memory storage). */
  readonly storage?: StorageAdapter;
  /** Storage namespace of the stream (default: the queue name). */
  readonly namespace?: string;
  /** Clock for arrival times and `x-max-age` (default: the system clock). */
  readonly clock?: Clock;
  /** Called once when the stream was deleted. */
  readonly onDelete?: (name: string) => void;
  /**
   * Receives errors nobody awaits, with where they came from (a consumer callback that threw,
   * retention that failed, an `OffsetClampedError` per stored consumer offset found past the end
   * on open). Default: a process warning.
   */
  readonly onError?: ErrorHandler;
  /**
   * Refuse what the stream would ignore: a queue argument it does not act on, a consumer
   * argument it does not know (406, naming the nearest known one). Default false.
   */
  readonly strict?: boolean;
  /** The virtual host named in the stream's errors (default `/`; the Broker passes its own). */
  readonly vhost?: string;
  /** Receives the offsets found lost on open (see `continuity.ts`); the broker's `onError`. */
  readonly onDataLoss?: (loss: DataLossError) => void;
}

const STREAM_OPTIONS: ReadonlySet<string> = new Set<keyof StreamQueueOptions>([
  'name',
  'storage',
  'namespace',
  'clock',
  'onDelete',
  'onError',
  'strict',
  'vhost',
  'onDataLoss',
  'durable',
  'exclusive',
  'autoDelete',
  'arguments',
]);

/** What `StreamQueue.open()` hands to the constructor. */
export interface StreamInit {
  readonly name: string;
  readonly arguments: StreamArguments;
  readonly storage: StorageAdapter;
  /** The stream created the storage itself and closes it with the stream. */
  readonly ownsStorage: boolean;
  readonly namespace: Namespace;
  readonly log: Log<StoredMessage>;
  readonly clock: Clock;
  readonly onDelete: ((name: string) => void) | undefined;
  readonly onError: ErrorHandler;
  readonly strict: boolean;
  readonly vhost: string;
}

const LOG_NAME = 'messages';
/** Metadata key of the normalized arguments a stream was declared with. */
const ARGUMENTS_KEY = 'stream.arguments';
const ignoreLoss = () => {};

/**
 * Checks the options, opens the stream's namespace and log and settles its arguments: a stream
 * that exists keeps the arguments it was declared with, and declaring it with other ones fails
 * with 406 "inequivalent arg". Offsets found lost go to `onDataLoss`.
 */
export async function openStreamStorage(options: StreamQueueOptions): Promise<StreamInit> {
  if (typeof options?.name !== 'string') throw new TypeError('StreamQueue.open() needs a name');
  refuseUnknownKeys(options, STREAM_OPTIONS, 'StreamQueue.open() option');
  if (options.strict !== undefined && typeof options.strict !== 'boolean') {
    throw new TypeError('StreamQueue.open() option strict must be a boolean');
  }
  if (options.vhost !== undefined && typeof options.vhost !== 'string') {
    throw new TypeError('StreamQueue.open() option vhost must be a string');
  }
  const vhost = options.vhost ?? DEFAULT_VHOST;
  const name = options.name;
  const declared = parseStreamArguments(options);
  const strict = options.strict === true;
  if (strict) {
    refuseUnknownArguments(options.arguments, STREAM_ARGUMENTS, 'argument', name, vhost);
  }
  const ownsStorage = options.storage === undefined;
  const storage = options.storage ?? memoryStorage();
  const namespace = await storage.namespace(options.namespace ?? name);
  const stored = namespace.meta.get(ARGUMENTS_KEY) as StreamArguments | undefined;
  if (stored !== undefined && options.arguments !== undefined) {
    const diff = streamArgumentsDiff(stored, declared);
    if (diff !== undefined) throw inequivalentArg(diff, queueResource(options));
  }
  const args = stored ?? declared;
  if (stored === undefined) namespace.meta.set(ARGUMENTS_KEY, args as unknown as JsonValue);
  const log = await namespace.openLog(LOG_NAME, messageViewCodec, {
    segmentBytes: args.segmentBytes,
  });
  checkContinuity(name, log, namespace.meta, options.onDataLoss ?? ignoreLoss);
  return {
    name,
    arguments: args,
    storage,
    ownsStorage,
    namespace,
    log,
    clock: options.clock ?? systemClock,
    onDelete: options.onDelete,
    onError: options.onError ?? warnOnError,
    strict,
    vhost,
  };
}
