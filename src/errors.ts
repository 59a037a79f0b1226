/**
 * Errors. Every failure the library reports on purpose is an `MqliteError` with a stable string
 * `code` to branch on and the AMQP `replyCode` a broker would have sent, and a message in the
 * broker's style ("PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'jobs'").
 * Plain programmer mistakes (an option of the wrong type) are `TypeError`/`RangeError`.
 */

/** Stable error codes. */
export type MqliteErrorCode =
  | 'MQLITE_PRECONDITION_FAILED'
  | 'MQLITE_NOT_FOUND'
  | 'MQLITE_NOT_IMPLEMENTED'
  | 'MQLITE_CLOSED'
  | 'MQLITE_CORRUPTION'
  | 'MQLITE_ACCESS_REFUSED'
  | 'MQLITE_RESOURCE_LOCKED'
  | 'MQLITE_QUEUE_FULL'
  | 'MQLITE_NO_ROUTE'
  | 'MQLITE_CONTENT_TOO_LARGE'
  | 'MQLITE_TIMEOUT'
  | 'MQLITE_ABORTED'
  | 'MQLITE_COMMAND_INVALID'
  | 'MQLITE_OFFSET_CLAMPED';

/** AMQP reply codes used by the library. */
export const ReplyCode = {
  CONTENT_TOO_LARGE: 311,
  NO_ROUTE: 312,
  ACCESS_REFUSED: 403,
  NOT_FOUND: 404,
  RESOURCE_LOCKED: 405,
  PRECONDITION_FAILED: 406,
  COMMAND_INVALID: 503,
  CHANNEL_ERROR: 504,
  NOT_IMPLEMENTED: 540,
  INTERNAL_ERROR: 541,
} as const;

const replyText: Record<number, string> = {
  311: 'CONTENT_TOO_LARGE',
  312: 'NO_ROUTE',
  403: 'ACCESS_REFUSED',
  404: 'NOT_FOUND',
  405: 'RESOURCE_LOCKED',
  406: 'PRECONDITION_FAILED',
  503: 'COMMAND_INVALID',
  504: 'CHANNEL_ERROR',
  540: 'NOT_IMPLEMENTED',
  541: 'INTERNAL_ERROR',
};

/** Base class of every error the library raises on purpose. */
export class MqliteError extends Error {
  override name = 'MqliteError';
  /** Stable machine-readable code. */
  readonly code: MqliteErrorCode;
  /** The AMQP reply code a broker would send for the same condition. */
  readonly replyCode: number;

  constructor(code: MqliteErrorCode, replyCode: number, detail: string, options?: ErrorOptions) {
    super(`${replyText[replyCode] ?? 'ERROR'} - ${detail}`, options);
    this.code = code;
    this.replyCode = replyCode;
  }
}

/** 406: an argument is invalid or differs from the existing declaration. */
export class PreconditionFailedError extends MqliteError {
  override name = 'PreconditionFailedError';
  constructor(detail: string) {
    super('MQLITE_PRECONDITION_FAILED', ReplyCode.PRECONDITION_FAILED, detail);
  }
}

/** 404: a queue or exchange does not exist. */
export class NotFoundError extends MqliteError {
  override name = 'NotFoundError';
  constructor(detail: string) {
    super('MQLITE_NOT_FOUND', ReplyCode.NOT_FOUND, detail);
  }
}

/** 540: the operation is not supported by this queue kind. */
export class NotImplementedError extends MqliteError {
  override name = 'NotImplementedError';
  constructor(detail: string) {
    super('MQLITE_NOT_IMPLEMENTED', ReplyCode.NOT_IMPLEMENTED, detail);
  }
}

/** The broker, queue or consumer was closed. */
export class ClosedError extends MqliteError {
  override name = 'ClosedError';
  constructor(detail: string) {
    super('MQLITE_CLOSED', ReplyCode.CHANNEL_ERROR, detail);
  }
}

/** Stored data failed its checksum or could not be decoded. */
export class CorruptionError extends MqliteError {
  override name = 'CorruptionError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_CORRUPTION', ReplyCode.INTERNAL_ERROR, detail, options);
  }
}

/** 403: the name is reserved (`amq.` prefix) or the operation is not allowed. */
export class AccessRefusedError extends MqliteError {
  override name = 'AccessRefusedError';
  constructor(detail: string) {
    super('MQLITE_ACCESS_REFUSED', ReplyCode.ACCESS_REFUSED, detail);
  }
}

/** 405: an exclusive resource is held by someone else. */
export class ResourceLockedError extends MqliteError {
  override name = 'ResourceLockedError';
  constructor(detail: string) {
    super('MQLITE_RESOURCE_LOCKED', ReplyCode.RESOURCE_LOCKED, detail);
  }
}

/** A publish was refused because the queue is at its length limit (`x-overflow: reject-publish`). */
export class QueueFullError extends MqliteError {
  override name = 'QueueFullError';
  constructor(detail: string) {
    super('MQLITE_QUEUE_FULL', ReplyCode.PRECONDITION_FAILED, detail);
  }
}

/** 312: a mandatory publish matched no queue. */
export class NoRouteError extends MqliteError {
  override name = 'NoRouteError';
  constructor(detail: string) {
    super('MQLITE_NO_ROUTE', ReplyCode.NO_ROUTE, detail);
  }
}

/** 311: a body or header table is larger than the configured limit. */
export class ContentTooLargeError extends MqliteError {
  override name = 'ContentTooLargeError';
  constructor(detail: string) {
    super('MQLITE_CONTENT_TOO_LARGE', ReplyCode.CONTENT_TOO_LARGE, detail);
  }
}

/** A wait (`consumeOne({ timeout })`) ran out of time. */
export class TimeoutError extends MqliteError {
  override name = 'TimeoutError';
  constructor(detail: string) {
    super('MQLITE_TIMEOUT', ReplyCode.CHANNEL_ERROR, detail);
  }
}

/** An operation was cancelled through its AbortSignal. */
export class AbortedError extends MqliteError {
  override name = 'AbortedError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_ABORTED', ReplyCode.CHANNEL_ERROR, detail, options);
  }
}

/** 503: a command names something the broker does not know, e.g. an unknown exchange type. */
export class CommandInvalidError extends MqliteError {
  override name = 'CommandInvalidError';
  constructor(detail: string) {
    super('MQLITE_COMMAND_INVALID', ReplyCode.COMMAND_INVALID, detail);
  }
}

/**
 * Reported (through the broker's `onError`, never thrown) when a stream opens with a consumer's
 * stored offset past its end, as a crash of an older version or damage could leave it: the
 * offset is moved back to the end, so the consumer reads what is published from there on.
 */
export class OffsetClampedError extends MqliteError {
  override name = 'OffsetClampedError';
  /** The stream. */
  readonly queue: string;
  /** The consumer tag whose offset was stored. */
  readonly tag: string;
  /** The offset found stored. */
  readonly stored: number;
  /** The offset it was moved to: the stream's next offset. */
  readonly clamped: number;

  constructor(queue: string, tag: string, stored: number, clamped: number) {
    super(
      'MQLITE_OFFSET_CLAMPED',
      ReplyCode.INTERNAL_ERROR,
      `stored offset ${stored} of consumer '${tag}' on stream '${queue}' is past its end; moved back to ${clamped}`,
    );
    this.queue = queue;
    this.tag = tag;
    this.stored = stored;
    this.clamped = clamped;
  }
}

/** "inequivalent arg 'x' for queue 'q'": a redeclare that differs from the declaration. */
export function inequivalentArg(arg: string, kind: 'queue' | 'exchange', name: string) {
  return new PreconditionFailedError(`inequivalent arg '${arg}' for ${kind} '${name}'`);
}

/** "invalid arg 'x' for queue 'q' of type ...": an argument that fails validation. */
export function invalidArg(arg: string, name: string, why: string) {
  return new PreconditionFailedError(`invalid arg '${arg}' for queue '${name}': ${why}`);
}

/** Throws `ClosedError` when `closed` is set: the guard at the top of every public call. */
export function assertOpen(closed: boolean, what: string): void {
  if (closed) throw new ClosedError(`${what} is closed`);
}
