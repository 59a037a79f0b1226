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
 * Receives one frame: its payload is `bytes[start, end)`, no view made (three frames come with
 * every message; a handler makes a view only where it keeps one). `bytes` are those pushed (or a
 * buffer joining them with the bytes held before), which stay as they are as long as the pusher
 * never writes into a buffer it pushed: sockets' reads are fresh buffers. Return false to stop:
 * the bytes after the frame are held until the next push (an empty one goes on with them).
 */
export type FrameHandler = (
  type: number,
  channel: number,
  bytes: Buffer,
  start: number,
  end: number,
) => boolean;

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
  /** The last `#frames` stopped at a handler's false rather than at the end of its bytes. */
  #stopped = false;

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
    let at = 0;
    if (this.#pending && this.#holdsWholeFrame(this.#pending)) {
      // Frames held since a handler stopped (a blocked connection): rare, joined as they are.
      chunk = Buffer.concat([this.#pending, chunk]);
      this.#pending = undefined;
    } else if (this.#pending) {
      // Only the frame that straddles the reads is joined: copying the whole read onto what was
      // held would copy every frame after it too.
      const pending = this.#pending;
      const joined = this.#completeFrame(pending, chunk);
      if (joined === undefined) return;
      this.#pending = undefined;
      this.#frames(joined, 0, onFrame, onAck);
      at = joined.length - pending.length;
      if (this.#stopped) {
        if (at < chunk.length) this.#pending = Buffer.from(chunk.subarray(at));
        return;
      }
    }
    at = this.#frames(chunk, at, onFrame, onAck);
    if (at < chunk.length) this.#pending = Buffer.from(chunk.subarray(at));
  }

  #holdsWholeFrame(held: Buffer): boolean {
    return held.length >= 7 && held.length >= held.readUInt32BE(3) + 8;
  }

  /**
   * The held bytes (the start of one frame) and the start of `chunk` joined into the one frame they begin, or undefined
   * (everything held) while `chunk` does not complete it. A header that announces a frame larger
   * than frame-max is returned alone, for `#frames` to refuse before anything is allocated.
   */
  #completeFrame(pending: Buffer, chunk: Buffer): Buffer | undefined {
    const held = pending.length;
    if (held + chunk.length < 7) {
      this.#pending = Buffer.concat([pending, chunk]);
      return undefined;
    }
    const header = held >= 7 ? pending : Buffer.concat([pending, chunk.subarray(0, 7 - held)], 7);
    const size = header.readUInt32BE(3);
    if (size + 8 > this.frameMax) return header.subarray(0, 7);
    const total = size + 8;
    if (held + chunk.length < total) {
      this.#pending = Buffer.concat([pending, chunk]);
      return undefined;
    }
    const frame = Buffer.allocUnsafe(total);
    pending.copy(frame, 0);
    chunk.copy(frame, held, 0, total - held);
    return frame;
  }

  /** Hands the complete frames of `buf` from `at` to the handlers; returns where it stopped. */
  #frames(buf: Buffer, at: number, onFrame: FrameHandler, onAck: AckHandler | undefined): number {
    this.#stopped = false;
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
          if (!taken) {
            this.#stopped = true;
            break;
          }
          continue;
        }
      }
      const start = at + 7;
      at = end + 1;
      // Stopped (a blocked connection): the frames after it wait for the next push.
      if (!onFrame(type, channel, buf, start, end)) {
        this.#stopped = true;
        break;
      }
    }
    return at;
  }
}
