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
  | 'MQLITE_DATA_LOSS'
  | 'MQLITE_STORAGE'
  | 'MQLITE_FORMAT_VERSION'
  | 'MQLITE_ACCESS_REFUSED'
  | 'MQLITE_RESOURCE_LOCKED'
  | 'MQLITE_QUEUE_FULL'
  | 'MQLITE_NO_ROUTE'
  | 'MQLITE_CONTENT_TOO_LARGE'
  | 'MQLITE_TIMEOUT'
  | 'MQLITE_ABORTED'
  | 'MQLITE_INVALID_CONFIG'
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

/** Marks the prototype of every `MqliteError` class, in whichever copy of mqlite made it. */
const errorBrand = Symbol.for('mqlite.error');

/** Whether `value` is an instance of `Class`, or an error of another copy's class of its name. */
function isInstance(Class: abstract new (...args: never[]) => unknown, value: unknown): boolean {
  if (Function.prototype[Symbol.hasInstance].call(Class, value)) return true;
  if (typeof value !== 'object' || value === null || !(errorBrand in value)) return false;
  for (let proto = Object.getPrototypeOf(value); proto; proto = Object.getPrototypeOf(proto)) {
    if (Object.hasOwn(proto, 'constructor') && proto.constructor.name === Class.name) return true;
  }
  return false;
}

/**
 * Base class of every error the library raises on purpose.
 *
 * `instanceof` holds across the ES and the CommonJS build: a process that loads both (one
 * dependency imports mqlite, another requires it) holds two copies of each class, and an error of
 * either copy is an instance of the other copy's class of the same name.
 */
export class MqliteError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class asked about, often a subclass.
    return isInstance(this, value);
  }

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
Object.defineProperty(MqliteError.prototype, errorBrand, { value: true });

/** 406: an argument is invalid or differs from the existing declaration. */
export class PreconditionFailedError extends MqliteError {
  override name = 'PreconditionFailedError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_PRECONDITION_FAILED', ReplyCode.PRECONDITION_FAILED, detail, options);
  }
}

/** 404: a queue or exchange does not exist. */
export class NotFoundError extends MqliteError {
  override name = 'NotFoundError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_NOT_FOUND', ReplyCode.NOT_FOUND, detail, options);
  }
}

/** 540: the operation is not supported by this queue kind. */
export class NotImplementedError extends MqliteError {
  override name = 'NotImplementedError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_NOT_IMPLEMENTED', ReplyCode.NOT_IMPLEMENTED, detail, options);
  }
}

/** The broker, queue or consumer was closed. */
export class ClosedError extends MqliteError {
  override name = 'ClosedError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_CLOSED', ReplyCode.CHANNEL_ERROR, detail, options);
  }
}

/** Where stored data is damaged: the file and, when known, the byte range. */
export interface DamageLocation {
  /** The damaged (or missing) file. */
  readonly file?: string | undefined;
  /** Byte position where the damage starts. */
  readonly position?: number | undefined;
  /** Byte position where intact data resumes (or the file ended). */
  readonly end?: number | undefined;
}

/** Stored data failed its checksum, could not be decoded, or is missing. */
export class CorruptionError extends MqliteError {
  override name = 'CorruptionError';
  readonly file: string | undefined;
  readonly position: number | undefined;
  readonly end: number | undefined;
  constructor(detail: string, options?: ErrorOptions & DamageLocation, code?: MqliteErrorCode) {
    super(code ?? 'MQLITE_CORRUPTION', ReplyCode.INTERNAL_ERROR, detail, options);
    this.file = options?.file;
    this.position = options?.position;
    this.end = options?.end;
  }
}

/** What recovery did about damaged or missing data (see {@link DataLossError}). */
export type DataLossKind =
  /** An unconfirmed last write, cut short by a crash, was cut off. */
  | 'torn-write'
  /** Damaged bytes were skipped; the intact records before and after them were kept. */
  | 'skipped'
  /** A missing or unreadable file was replaced by its previous version. */
  | 'restored'
  /** A file or directory that should exist does not. */
  | 'missing'
  /** Offsets are missing between two retained ones. */
  | 'gap'
  /** A counter was moved past damage so that no offset is handed out twice. */
  | 'reset';

/**
 * Recovery lost or changed stored data and carried on: reported through the broker's `onError`
 * (never thrown at a caller), with where and how much.
 */
export class DataLossError extends CorruptionError {
  override name = 'DataLossError';
  readonly kind: DataLossKind;
  /** Records (messages, metadata entries) lost, when known. */
  readonly records: number | undefined;
  /** Bytes cut or skipped, when known. */
  readonly bytes: number | undefined;
  constructor(
    kind: DataLossKind,
    detail: string,
    options?: ErrorOptions & DamageLocation & { records?: number; bytes?: number },
  ) {
    super(detail, options, 'MQLITE_DATA_LOSS');
    this.kind = kind;
    this.records = options?.records;
    this.bytes = options?.bytes;
  }
}

/**
 * 541: the file system failed an operation: the disk is full (`ENOSPC`), a device error
 * (`EIO`), a permission. `cause` is the system's error. What failed is not lost or half-written
 * as far as anything confirmed goes; an operation that rejected with it may or may not be stored.
 */
export class StorageError extends MqliteError {
  override name = 'StorageError';
  /** The file or directory operated on, when known. */
  readonly file: string | undefined;
  /** The system's error code (`'ENOSPC'`, `'EIO'`, ...), when it gave one. */
  readonly ioCode: string | undefined;

  constructor(
    detail: string,
    options: {
      readonly file?: string | undefined;
      readonly ioCode?: string | undefined;
      readonly cause?: unknown;
    } = {},
  ) {
    super('MQLITE_STORAGE', ReplyCode.INTERNAL_ERROR, detail, { cause: options.cause });
    this.file = options.file;
    this.ioCode = options.ioCode;
  }
}

/** Whether `error` is a {@link StorageError} saying the disk (or the user's quota) is full. */
export function isNoSpace(error: unknown): boolean {
  return error instanceof StorageError && (error.ioCode === 'ENOSPC' || error.ioCode === 'EDQUOT');
}

/**
 * 540: a data directory is in a format version this version of mqlite does not read (written by
 * a newer one). Nothing in it was read or changed.
 */
export class FormatVersionError extends MqliteError {
  override name = 'FormatVersionError';
  /** The directory's format version. */
  readonly version: number;
  /** The versions this code reads. */
  readonly readable: { readonly oldest: number; readonly newest: number };

  constructor(detail: string, version: number, readable: { oldest: number; newest: number }) {
    super('MQLITE_FORMAT_VERSION', ReplyCode.NOT_IMPLEMENTED, detail);
    this.version = version;
    this.readable = readable;
  }
}

/** 403: the name is reserved (`amq.` prefix) or the operation is not allowed. */
export class AccessRefusedError extends MqliteError {
  override name = 'AccessRefusedError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_ACCESS_REFUSED', ReplyCode.ACCESS_REFUSED, detail, options);
  }
}

/** 405: an exclusive resource is held by someone else. */
export class ResourceLockedError extends MqliteError {
  override name = 'ResourceLockedError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_RESOURCE_LOCKED', ReplyCode.RESOURCE_LOCKED, detail, options);
  }
}

/** A publish was refused because the queue is at its length limit (`x-overflow: reject-publish`). */
export class QueueFullError extends MqliteError {
  override name = 'QueueFullError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_QUEUE_FULL', ReplyCode.PRECONDITION_FAILED, detail, options);
  }
}

/** 312: a mandatory publish matched no queue. */
export class NoRouteError extends MqliteError {
  override name = 'NoRouteError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_NO_ROUTE', ReplyCode.NO_ROUTE, detail, options);
  }
}

/** 311: a body or header table is larger than the configured limit. */
export class ContentTooLargeError extends MqliteError {
  override name = 'ContentTooLargeError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_CONTENT_TOO_LARGE', ReplyCode.CONTENT_TOO_LARGE, detail, options);
  }
}

/** A wait (`consumeOne({ timeout })`) ran out of time. */
export class TimeoutError extends MqliteError {
  override name = 'TimeoutError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_TIMEOUT', ReplyCode.CHANNEL_ERROR, detail, options);
  }
}

/** An operation was cancelled through its AbortSignal. */
export class AbortedError extends MqliteError {
  override name = 'AbortedError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_ABORTED', ReplyCode.CHANNEL_ERROR, detail, options);
  }
}

/**
 * 406: a config or definitions file (or object) that cannot be loaded: not JSON, an entry of the
 * wrong shape, an unknown key or a bad value. The message names the file, the entry and the field.
 */
export class InvalidConfigError extends MqliteError {
  override name = 'InvalidConfigError';
  constructor(detail: string, options?: ErrorOptions) {
    super('MQLITE_INVALID_CONFIG', ReplyCode.PRECONDITION_FAILED, detail, options);
  }
}

/** The constructor every `MqliteError` subclass has. */
type MqliteErrorClass = new (detail: string, options?: ErrorOptions) => MqliteError;

/**
 * `error` again, of the same class, code and reply code, its detail prefixed by `where` (the
 * config and queue a declaration came from) and the original kept as its `cause`.
 */
export function withContext(error: MqliteError, where: string): MqliteError {
  // Errors of stored data name their file and fields already; they are not rebuilt.
  if (carriesItsOwnPlace(error)) return error;
  const detail = error.message.replace(/^[A-Z_]+ - /, '');
  if (error.constructor === MqliteError) {
    return new MqliteError(error.code, error.replyCode, `${where}: ${detail}`, { cause: error });
  }
  const Class = error.constructor as MqliteErrorClass;
  return new Class(`${where}: ${detail}`, { cause: error });
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

/** The virtual host a broker is, and a queue opened on its own is in, unless told otherwise. */
export const DEFAULT_VHOST = '/';

/** A resource as RabbitMQ's errors name it: "queue 'jobs' in vhost '/'". */
export function resourceName(
  kind: 'queue' | 'exchange' | 'policy' | 'shovel',
  name: string,
  vhost: string,
): string {
  return `${kind} '${name}' in vhost '${vhost}'`;
}

/** A queue as errors name it, from a queue's options (vhost `/` unless they name another). */
export function queueResource(options: {
  readonly name: string;
  readonly vhost?: string | undefined;
}): string {
  return resourceName('queue', options.name, options.vhost ?? DEFAULT_VHOST);
}

/**
 * "inequivalent arg 'x' for queue 'q' in vhost '/'": a redeclare that differs from the
 * declaration. `resource` names the queue as {@link resourceName} does.
 */
export function inequivalentArg(arg: string, resource: string) {
  return new PreconditionFailedError(`inequivalent arg '${arg}' for ${resource}`);
}

/**
 * "invalid arg 'x' for queue 'q' in vhost '/': why": an argument that fails validation.
 * `resource` names the queue as {@link resourceName} does.
 */
export function invalidArg(arg: string, resource: string, why: string) {
  return new PreconditionFailedError(`invalid arg '${arg}' for ${resource}: ${why}`);
}

/** Throws `ClosedError` when `closed` is set: the guard at the top of every public call. */
export function assertOpen(closed: boolean, what: string): void {
  if (closed) throw new ClosedError(`${what} is closed`);
}

/** Whether `error` is one of stored data, whose class takes more than a detail to build. */
function carriesItsOwnPlace(error: MqliteError): boolean {
  return (
    error instanceof CorruptionError ||
    error instanceof StorageError ||
    error instanceof FormatVersionError ||
    error instanceof OffsetClampedError
  );
}
