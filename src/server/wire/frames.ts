/**
 * Cuts a byte stream into frames. A frame larger than the negotiated frame-max, of an unknown
 * type or without its end marker is a `FrameError` (AMQP 501 FRAME_ERROR); nothing of a
 * partial frame is buffered beyond frame-max.
 */
import { Buffer } from 'node:buffer';
import {
  FRAME_BODY,
  FRAME_END,
  FRAME_HEADER,
  FRAME_HEARTBEAT,
  FRAME_METHOD,
  isBasicAck,
} from './methods.js';

/** Bytes as RabbitMQ prints them in its reply texts (an Erlang binary): `<<0,10>>`. */
export function octets(bytes: Uint8Array): string {
  return `<<${bytes.join(',')}>>`;
}

/** The stream is not a sequence of valid frames: AMQP 501 FRAME_ERROR. */
export class FrameError extends Error {
  override name = 'FrameError';
}

/**
 * Receives one frame. Its payload is a view of the bytes pushed (or of a buffer joining them
 * with the bytes held before), which stay as they are as long as the pusher never writes into a
 * buffer it pushed: sockets' reads are fresh buffers. Return false to stop: the bytes after the
 * frame are held until the next push (an empty one goes on with them).
 */
export type FrameHandler = (type: number, channel: number, payload: Buffer) => boolean;

/**
 * Receives a basic.ack frame read in place (no payload view made: a consumer sends one for every
 * message): true or false as a {@link FrameHandler} returns, undefined to have the frame go to the
 * frame handler instead.
 */
export type AckHandler = (
  channel: number,
  deliveryTag: number,
  multiple: boolean,
) => boolean | undefined;

export class FrameParser {
  /** Largest frame accepted, overhead included. */
  frameMax: number;
  #pending: Buffer | undefined;

  constructor(frameMax: number) {
    this.frameMax = frameMax;
  }

  /** Bytes held of an incomplete frame. */
  get buffered(): number {
    return this.#pending?.length ?? 0;
  }

  /**
   * Feeds bytes; calls `onFrame` for each complete frame, in order, and `onAck` first for each
   * basic.ack.
   * @throws FrameError for a frame that cannot be valid.
   */
  push(chunk: Buffer, onFrame: FrameHandler, onAck?: AckHandler): void {
    let buf = chunk;
    if (this.#pending) {
      buf = Buffer.concat([this.#pending, chunk]);
      this.#pending = undefined;
    }
    let at = 0;
    while (buf.length - at >= 7) {
      const type = buf[at]!;
      if (
        type !== FRAME_METHOD &&
        type !== FRAME_HEADER &&
        type !== FRAME_BODY &&
        type !== FRAME_HEARTBEAT
      ) {
        throw new FrameError(`unknown frame type ${type}`);
      }
      const channel = buf.readUInt16BE(at + 1);
      const size = buf.readUInt32BE(at + 3);
      if (size + 8 > this.frameMax) {
        // RabbitMQ's wording: the payload size and the largest payload frame-max leaves room for.
        throw new FrameError(
          `type ${type}, all octets = <<>>: {frame_too_large,${size},${this.frameMax - 8}}`,
        );
      }
      const end = at + 7 + size;
      if (end >= buf.length) break;
      if (buf[end] !== FRAME_END) throw new FrameError(`frame end marker missing (type ${type})`);
      if (onAck !== undefined && type === FRAME_METHOD && isBasicAck(buf, at + 7, size)) {
        const tag = buf.readUInt32BE(at + 11) * 2 ** 32 + buf.readUInt32BE(at + 15);
        const taken = onAck(channel, tag, buf[at + 19] === 1);
        if (taken !== undefined) {
          at = end + 1;
          if (!taken) break;
          continue;
        }
      }
      const payload = buf.subarray(at + 7, end);
      at = end + 1;
      // Stopped (a blocked connection): the frames after it wait for the next push.
      if (!onFrame(type, channel, payload)) break;
    }
    if (at < buf.length) this.#pending = Buffer.from(buf.subarray(at));
  }
}
