import { PreconditionFailedError } from '../../errors.js';
import type { Log } from '../../storage/types.js';

/**
 * Where a stream consumer starts, as given by `x-stream-offset`:
 * - `first`: the oldest retained message; `last`: the first message of the newest segment;
 *   `next`: only messages published after the consumer attaches;
 * - `offset`: an absolute offset (0 = the beginning), clamped to what is retained;
 * - `tail`: the last `count` messages;
 * - `time`: the first message that arrived at or after `time` (ms since the epoch).
 */
export type OffsetSpec =
  | { readonly kind: 'first' | 'last' | 'next' }
  | { readonly kind: 'offset'; readonly offset: number }
  | { readonly kind: 'tail'; readonly count: number }
  | { readonly kind: 'time'; readonly time: number };

const INVALID = "x-stream-offset must be an integer, a timestamp, 'first', 'next' or 'last'";

/**
 * Parses an `x-stream-offset` value: `'first'`, `'last'`, `'next'`, an integer (negative =
 * the last k messages; a bigint is an AMQP long), or a `Date` (how AMQP timestamps arrive).
 *
 * @throws PreconditionFailedError (406) for anything else (`'foo'`, `1.5`, `'5'`, an invalid
 *   Date).
 */
export function parseOffsetSpec(value: unknown): OffsetSpec {
  if (value === 'first' || value === 'last' || value === 'next') return { kind: value };
  if (value instanceof Date) {
    const time = value.getTime();
    if (Number.isNaN(time)) throw new PreconditionFailedError(INVALID);
    return { kind: 'time', time };
  }
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n === 'number' && Number.isSafeInteger(n)) {
    return n < 0 ? { kind: 'tail', count: -n } : { kind: 'offset', offset: n };
  }
  throw new PreconditionFailedError(INVALID);
}

/**
 * The offset a consumer with this spec reads first, at this moment. Uses only the log's
 * in-memory segment index (and its sparse in-segment index for times): no record is read.
 */
export function resolveOffsetSpec(spec: OffsetSpec, log: Log<unknown>): number {
  const first = log.firstOffset;
  const next = log.nextOffset;
  switch (spec.kind) {
    case 'first':
      return first;
    case 'next':
      return next;
    case 'last':
      return lastChunkStart(log);
    case 'offset':
      return Math.min(Math.max(spec.offset, first), next);
    case 'tail':
      return Math.max(next - spec.count, first);
    case 'time':
      return Math.max(log.offsetAt(spec.time), first);
  }
}

/** First offset of the newest segment holding a record (the last "chunk"), or `nextOffset`. */
function lastChunkStart(log: Log<unknown>): number {
  const segments = log.segments();
  for (let i = segments.length - 1; i >= 0; i--) {
    const segment = segments[i]!;
    if (segment.lastOffset >= segment.firstOffset)
      return Math.max(segment.firstOffset, log.firstOffset);
  }
  return log.nextOffset;
}
