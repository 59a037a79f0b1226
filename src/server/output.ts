/**
 * A connection's output: frames appended to one buffer, written to the socket once the event
 * loop has run the turn's I/O callbacks (or as soon as a batch is large): the deliveries and
 * confirms answering every read of that turn leave in one write, not one write a read. And
 * whether the socket drains. While it does not, the
 * connection's consumers pause; the channels' methods still get their replies. A frame is written
 * whole or not at all: a batch that fails to encode part-way is cut off the buffer, and the
 * connection is told (it closes with 541, as RabbitMQ does for an internal error).
 */
import type { Socket } from 'node:net';
import type { Clock } from '../clock.js';
import type { Heartbeats } from './heartbeats.js';
import { Writer } from './wire/bytes.js';

/** Output bytes gathered before they are written without waiting for the end of the turn. */
const WRITE_BATCH = 256 * 1024;
/** The output buffer's first size. */
const OUTPUT_START = 4096;

export class ConnectionOutput {
  /** False while the socket is not draining. */
  writable = true;
  readonly #socket: Socket;
  readonly #heartbeats: Heartbeats;
  /** The socket stopped or started draining. */
  readonly #onWritable: () => void;
  /** A batch of frames could not be encoded (and was dropped). */
  readonly #onUnencodable: (error: unknown) => void;
  /** Starts small: an idle connection holds it all its life; a busy one grows it once. */
  readonly #out = new Writer(OUTPUT_START);
  /**
   * The buffer of the write before, once the socket is done with it: the socket is handed the
   * appended bytes themselves (no copy), and frames go into the other buffer meanwhile. Kept by
   * a busy connection only (one whose output grew), so an idle one holds a single small buffer.
   */
  #spare: Buffer | undefined;
  #flushScheduled = false;
  #closed = false;
  /** Frames leave this long after they are flushed (a test's latency fault). */
  #latency: { readonly ms: number; readonly clock: Clock } | undefined;

  /** Where the batch appended through `writer()` starts, until `appended()` or `failed()`. */
  #batchStart = 0;

  constructor(
    socket: Socket,
    heartbeats: Heartbeats,
    onWritable: () => void,
    onUnencodable: (error: unknown) => void,
  ) {
    this.#socket = socket;
    this.#heartbeats = heartbeats;
    this.#onWritable = onWritable;
    this.#onUnencodable = onUnencodable;
    socket.on('drain', () => this.#setWritable(true));
  }

  /** Appends frames; nothing once closed, nor when `build` throws (see `failed()`). */
  write(build: (w: Writer) => void): void {
    const out = this.writer();
    if (!out) return;
    try {
      build(out);
    } catch (error) {
      this.failed(error);
      return;
    }
    this.appended();
  }

  /**
   * The buffer to append frames to directly, each batch followed by `appended()`, or by
   * `failed()` when it throws part-way.
   */
  writer(): Writer | undefined {
    if (this.#closed) return undefined;
    this.#batchStart = this.#out.pos;
    return this.#out;
  }

  /** The batch begun by `writer()` threw part-way: its bytes are dropped, the error reported. */
  failed(error: unknown): void {
    this.#out.pos = this.#batchStart;
    this.#onUnencodable(error);
  }

  /** Frames were appended: they go out once the turn's I/O callbacks have run. */
  appended(): void {
    if (this.#out.pos >= WRITE_BATCH) this.flush();
    else if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(this.#flushSoon);
    }
  }

  readonly #flushSoon = (): void => this.flush();

  /** Writes what was appended to the socket now. */
  flush(): void {
    this.#flushScheduled = false;
    const out = this.#out;
    if (out.pos === 0 || this.#closed) return;
    this.#heartbeats.wrote();
    const latency = this.#latency;
    if (!latency) {
      const full = out.buf;
      const bytes = full.subarray(0, out.pos);
      // Without a spare (the socket still holds it), a buffer the size of this batch: a grown
      // buffer for every write a slow socket queues would hold far more than the bytes it holds.
      out.buf = this.#spare ?? Buffer.allocUnsafe(Math.max(OUTPUT_START, out.pos));
      out.pos = 0;
      this.#spare = undefined;
      const drained = this.#socket.write(bytes, () => {
        if (full.length > OUTPUT_START) this.#spare = full;
      });
      if (!drained) this.#setWritable(false);
      return;
    }
    const bytes = out.take();
    out.pos = 0;
    // Timers of one delay fire in the order they were set: the frames keep their order.
    latency.clock.setTimeout(() => {
      if (!this.#socket.destroyed) this.#send(bytes);
    }, latency.ms);
  }

  /** Every frame from now on leaves `ms` later on `clock` (0: at once again). */
  delay(ms: number, clock: Clock): void {
    this.#latency = ms > 0 ? { ms, clock } : undefined;
  }

  #send(bytes: Buffer): void {
    if (!this.#socket.write(bytes)) this.#setWritable(false);
  }

  /** The connection ended: nothing more is written. */
  close(): void {
    this.#closed = true;
  }

  #setWritable(writable: boolean): void {
    if (this.writable === writable) return;
    this.writable = writable;
    this.#onWritable();
  }
}
