/**
 * Messages kept packed: a body as a range of a buffer shared with other messages, and an
 * envelope (properties, exchange, routing key) shared with the messages around it. A message is
 * materialized when read, as one small object; its body view is made only if the body is read.
 */
import type { RecordPacking } from '../storage/types.js';
import { sharedProperties } from './normalize.js';
import type { MessageProperties, StoredMessage } from './types.js';

/** A message read from packed storage. */
export class PackedMessage implements StoredMessage {
  readonly properties: Readonly<MessageProperties>;
  readonly exchange: string;
  readonly routingKey: string;
  readonly bodyLength: number;
  readonly #buffer: ArrayBufferLike;
  readonly #byteOffset: number;
  #body: Uint8Array | undefined;

  constructor(
    properties: Readonly<MessageProperties>,
    exchange: string,
    routingKey: string,
    buffer: ArrayBufferLike,
    byteOffset: number,
    bodyLength: number,
  ) {
    this.properties = properties;
    this.exchange = exchange;
    this.routingKey = routingKey;
    this.#buffer = buffer;
    this.#byteOffset = byteOffset;
    this.bodyLength = bodyLength;
  }

  get body(): Uint8Array {
    this.#body ??= new Uint8Array(this.#buffer, this.#byteOffset, this.bodyLength);
    return this.#body;
  }
}

/** Body bytes of a message, without making the body view of a packed one. */
export function bodyLength(message: StoredMessage): number {
  return message instanceof PackedMessage ? message.bodyLength : message.body.length;
}

const NO_BODY = new Uint8Array(0);

/** How the memory adapter packs messages: the body is the payload, the rest the envelope. */
export const messagePacking: RecordPacking<StoredMessage> = {
  payload: (message) => message.body,
  envelope: (message) => ({
    exchange: message.exchange,
    routingKey: message.routingKey,
    properties: sharedProperties(message.properties),
    body: NO_BODY,
  }),
  matches: (message, envelope) =>
    message.properties === envelope.properties &&
    message.exchange === envelope.exchange &&
    message.routingKey === envelope.routingKey,
  unpack: (envelope, buffer, byteOffset, length) =>
    new PackedMessage(
      envelope.properties,
      envelope.exchange,
      envelope.routingKey,
      buffer,
      byteOffset,
      length,
    ),
};
