/**
 * A publish assembled from its frames: the basic.publish method, then one content header, then
 * body frames until the header's body size is reached. A frame out of this order is 505
 * UNEXPECTED_FRAME; a body larger than the server's `max_message_size` (128 MiB by default) is
 * refused from its header, before any of it is buffered.
 */
import type { MessageProperties } from '../message/types.js';
import { AmqpException } from './errors.js';
import { MAX_MESSAGE_BYTES } from './limits.js';
import { ContentHeaderReader } from './wire/properties.js';
import type { ArgsOf } from './wire/spec.js';

/** A complete publish. */
export interface Publish {
  readonly args: ArgsOf<'basic.publish'>;
  readonly properties: MessageProperties;
  readonly body: Buffer;
}

const EMPTY_BODY = Buffer.alloc(0);

export class ContentAssembly {
  /** Largest body accepted (the server's `maxMessageBytes`). */
  readonly #maxBytes: number;
  #args: ArgsOf<'basic.publish'> | undefined;
  #properties: MessageProperties | undefined;
  #size = 0;
  /** The body of one frame, the usual case: a view of the bytes read. */
  #whole: Buffer | undefined;
  /** Body frames received, copied: memory follows what arrived, not what a header claims. */
  #chunks: Buffer[] | undefined;
  #received = 0;
  readonly #headers = new ContentHeaderReader();

  constructor(maxBytes = MAX_MESSAGE_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /** Whether a publish waits for its content frames. */
  get pending(): boolean {
    return this.#args !== undefined;
  }

  /** A basic.publish arrived: its content frames come next. */
  start(args: ArgsOf<'basic.publish'>): void {
    this.#args = args;
    this.#properties = undefined;
    this.#whole = undefined;
    this.#chunks = undefined;
    this.#received = 0;
  }

  /** Forgets a publish under way. */
  reset(): void {
    this.#args = undefined;
  }

  /**
   * A content header frame, `bytes[start, end)`; returns the publish when its body is empty.
   * @throws AmqpException 505 out of order, 406 for a body over the size limit.
   */
  header(bytes: Buffer, start: number, end: number): Publish | undefined {
    if (!this.#args || this.#properties) {
      throw new AmqpException(505, 'expected method frame, got non method frame instead');
    }
    const header = this.#headers;
    header.read(bytes, start, end);
    if (header.classId !== 60) {
      throw new AmqpException(
        505,
        `expected content header for class 60, got one for class ${header.classId} instead`,
      );
    }
    if (header.bodySize > this.#maxBytes) {
      this.reset();
      throw new AmqpException(
        406,
        `message size ${header.bodySize} is larger than configured max size ${this.#maxBytes}`,
      );
    }
    this.#properties = header.properties;
    this.#size = header.bodySize;
    return header.bodySize === 0 ? this.#complete() : undefined;
  }

  /**
   * A content body frame; returns the publish once its body is complete.
   * @throws AmqpException 505 out of order, 501 past the header's body size.
   */
  body(payload: Buffer): Publish | undefined {
    if (!this.#args || !this.#properties) {
      throw new AmqpException(505, 'expected method frame, got non method frame instead');
    }
    if (this.#received + payload.length > this.#size) {
      throw new AmqpException(501, 'content body frames exceed the size in the content header');
    }
    if (payload.length === this.#size) {
      // The usual one-frame body: the broker copies it when it stores it, so a view of the
      // bytes read does (a read's buffer is never reused; it lives as long as the publish).
      this.#whole = payload;
    } else (this.#chunks ??= []).push(Buffer.from(payload));
    this.#received += payload.length;
    return this.#received === this.#size ? this.#complete() : undefined;
  }

  #complete(): Publish {
    const chunks = this.#chunks;
    const body =
      this.#whole ?? (chunks === undefined ? EMPTY_BODY : Buffer.concat(chunks, this.#size));
    const publish = { args: this.#args!, properties: this.#properties!, body };
    this.reset();
    this.#whole = undefined;
    this.#chunks = undefined;
    return publish;
  }
}
