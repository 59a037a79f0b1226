/**
 * Which consumers a stream admits and where each starts: RabbitMQ's refusals (no `noAck`, no
 * `prefetch: 0`, no exclusive or prioritized consumer, a reused tag, a (strict) unknown consumer
 * argument), then its offset spec, filter and offset tracking resolved against the log. Separate
 * from `StreamQueue` because it only judges a request: the stream registers the consumer and
 * wakes it.
 */
import { PreconditionFailedError } from '../../errors.js';
import {
  FILTER_ARG,
  MATCH_TYPE_ARG,
  MATCH_UNFILTERED_ARG,
  parseStreamFilter,
} from '../../filters/index.js';
import type { StoredMessage } from '../../message/types.js';
import type { Log } from '../../storage/types.js';
import { checkSubscribeParams, generateConsumerTag, type SubscribeParams } from '../consumer.js';
import { refuseUnknownArguments } from '../unknown-names.js';
import { parseOffsetSpec, resolveOffsetSpec } from './offset-spec.js';
import type { StreamConsumerOptions } from './stream-consumer.js';
import type { OffsetStore } from './tracking.js';

/** Prefetch of a stream consumer that gave none: streams need a bounded window. */
const DEFAULT_STREAM_PREFETCH = 1000;

const TRACKING_ARG = 'x-stream-automatic-offset-tracking';
/** Consumer arguments a stream knows (strict mode refuses any other). */
const CONSUMER_ARGUMENTS: readonly string[] = [
  'x-stream-offset',
  TRACKING_ARG,
  FILTER_ARG,
  MATCH_TYPE_ARG,
  MATCH_UNFILTERED_ARG,
  'x-priority',
];

/** What a stream knows when a consumer asks to join it. */
export interface AdmittingStream {
  readonly name: string;
  readonly vhost: string;
  /** Unknown consumer arguments are refused. */
  readonly strict: boolean;
  readonly log: Log<StoredMessage>;
  readonly offsets: OffsetStore;
  /** The stream's consumers by tag. */
  readonly consumers: ReadonlyMap<string, unknown>;
}

/** An admitted consumer: its params with tag and prefetch filled in, and where it starts. */
export interface AdmittedStreamConsumer {
  readonly params: SubscribeParams & { readonly tag: string; readonly prefetch: number };
  readonly options: StreamConsumerOptions;
}

/**
 * Checks a new consumer's params against its stream and resolves where it starts: its stored
 * offset when it tracks one, else its `x-stream-offset`, else the first retained message.
 * @throws PreconditionFailedError (406), as `StreamQueue.subscribe` documents them.
 */
export function admitStreamConsumer(
  params: SubscribeParams,
  stream: AdmittingStream,
): AdmittedStreamConsumer {
  checkSubscribeParams(params);
  if (params.noAck === true) {
    throw new PreconditionFailedError(
      'stream consumers must acknowledge messages (noAck is not allowed)',
    );
  }
  if (params.prefetch === 0) {
    throw new PreconditionFailedError(
      'stream consumers need a prefetch limit (prefetch 0 is not allowed)',
    );
  }
  if (params.exclusive === true) {
    throw new PreconditionFailedError('exclusive consumers are not allowed on streams');
  }
  const args = params.args ?? {};
  if (args['x-priority'] !== undefined) {
    throw new PreconditionFailedError('consumer priority (x-priority) is not allowed on streams');
  }
  if (stream.strict) {
    refuseUnknownArguments(
      args,
      CONSUMER_ARGUMENTS,
      'consumer argument',
      stream.name,
      stream.vhost,
    );
  }
  const explicit = args['x-stream-offset'];
  const spec = explicit === undefined ? undefined : parseOffsetSpec(explicit);
  const filter = parseStreamFilter(args, stream.strict);
  if (params.tag !== undefined && typeof params.tag !== 'string') {
    throw new TypeError('consumer tag must be a string');
  }
  const tag = params.tag || generateConsumerTag();
  if (stream.consumers.has(tag)) {
    throw new PreconditionFailedError(
      `consumer tag '${tag}' is already in use on queue '${stream.name}'`,
    );
  }
  const automatic = args[TRACKING_ARG] === true || args[TRACKING_ARG] === 'true';
  const tracking = !tag.startsWith('amq.ctag-') && (spec === undefined || automatic);
  const log = stream.log;
  // A stored offset beyond the end (a crash cut the log's tail) resumes at the end.
  const storedOffset = tracking ? stream.offsets.get(tag) : undefined;
  const stored = storedOffset === undefined ? undefined : Math.min(storedOffset, log.nextOffset);
  const start = stored ?? (spec === undefined ? log.firstOffset : resolveOffsetSpec(spec, log));
  return {
    params: { ...params, tag, prefetch: params.prefetch ?? DEFAULT_STREAM_PREFETCH },
    options: { start, tracking, filter },
  };
}
