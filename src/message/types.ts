/**
 * The message model, shaped like `@cloudamqp/amqp-client` 4.x so application code moves between
 * mqlite and a real broker unchanged.
 */

/** A header value: what an AMQP field table can carry. */
export type FieldValue =
  | string
  | number
  | boolean
  | bigint
  | null
  | undefined
  | Date
  | Uint8Array
  | readonly FieldValue[]
  | { readonly [key: string]: FieldValue };

/** A header table. */
export type FieldTable = Record<string, FieldValue>;

/** AMQP basic properties in camelCase, as `@cloudamqp/amqp-client` names them. */
export interface MessageProperties {
  /** MIME type of the body, e.g. `application/json`. */
  contentType?: string;
  /** Encoding of the body, e.g. `gzip`. */
  contentEncoding?: string;
  /** Application headers; also used by headers exchanges, filters and LVQ keys. */
  headers?: FieldTable;
  /** 1 = transient, 2 = persistent. */
  deliveryMode?: number;
  /** 0..255; a priority queue caps it at its `x-max-priority`. */
  priority?: number;
  correlationId?: string;
  replyTo?: string;
  /** Per-message TTL in milliseconds, as a string of digits (AMQP's spelling). */
  expiration?: string;
  messageId?: string;
  /** When the message was created, as the publisher says. */
  timestamp?: Date;
  type?: string;
  userId?: string;
  appId?: string;
}

/** What `publish` accepts as a body: bytes, a string (UTF-8), `null`, or any JSON value. */
export type PublishBody =
  | Uint8Array
  | ArrayBuffer
  | string
  | null
  | undefined
  | object
  | number
  | boolean;

/**
 * A message as stored: immutable once published. `body` is owned by the queue (a copy of what
 * the publisher passed), so later mutation of the caller's buffer changes nothing.
 */
export interface StoredMessage {
  readonly exchange: string;
  readonly routingKey: string;
  readonly properties: Readonly<MessageProperties>;
  readonly body: Uint8Array;
}
