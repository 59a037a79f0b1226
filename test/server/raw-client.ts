/**
 * A client that speaks raw AMQP bytes, for protocol tests: it sends whatever bytes it is given
 * and decodes what the server sends back into frames.
 */
import { connect, type Socket } from 'node:net';
import { Reader, Writer } from '../../src/server/wire/bytes.js';
import { FrameParser } from '../../src/server/wire/frames.js';
import {
  FRAME_METHOD,
  methodFrame,
  type OutArgs,
  readArgs,
  writeContent,
} from '../../src/server/wire/methods.js';
import { readContentHeader } from '../../src/server/wire/properties.js';
import { type Method, type MethodName, methodById } from '../../src/server/wire/spec.js';

export interface Frame {
  readonly type: number;
  readonly channel: number;
  readonly payload: Buffer;
  /** The decoded method of a method frame. */
  readonly method?: Method;
}

/** How long a wait for the server lasts before failing. Generous: success is fast. */
const DEADLINE_MS = 15_000;

export const HEADER = Buffer.from('AMQP\x00\x00\x09\x01', 'latin1');

export class RawClient {
  readonly frames: Frame[] = [];
  /** Every byte the server sent, in order (see {@link wellFormed}). */
  readonly received: Buffer[] = [];
  /** Bytes before the first frame (a protocol header sent back). */
  raw = Buffer.alloc(0);
  closed = false;
  readonly #socket: Socket;
  readonly #parser = new FrameParser(16 * 1024 * 1024);
  #framing = false;
  #waiters: (() => void)[] = [];

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('close', () => {
      this.closed = true;
      this.#wake();
    });
    socket.on('error', () => {});
  }

  static async connect(port: number): Promise<RawClient> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new RawClient(socket);
  }

  /** Connects and completes the handshake (PLAIN guest/guest, the server's tune values). */
  static async open(
    port: number,
    tune: { frameMax?: number; heartbeat?: number; capabilities?: object } = {},
  ): Promise<RawClient> {
    const client = await RawClient.connect(port);
    client.send(HEADER);
    await client.method('connection.start');
    client.sendMethod(0, 'connection.start-ok', {
      clientProperties: { capabilities: { consumer_cancel_notify: true, ...tune.capabilities } },
      mechanism: 'PLAIN',
      response: '\0guest\0guest',
      locale: 'en_US',
    });
    const t = await client.method('connection.tune');
    client.sendMethod(0, 'connection.tune-ok', {
      channelMax: (t.args as { channelMax: number }).channelMax,
      frameMax: tune.frameMax ?? 131072,
      heartbeat: tune.heartbeat ?? 0,
    });
    client.sendMethod(0, 'connection.open', { virtualHost: '/', capabilities: '', insist: false });
    await client.method('connection.open-ok');
    return client;
  }

  send(bytes: Uint8Array): void {
    this.#socket.write(bytes);
  }

  sendMethod<N extends MethodName>(channel: number, name: N, args: OutArgs<N>): void {
    this.send(methodFrame(channel, name, args));
  }

  /** Sends a publish with its content frames. */
  publish(channel: number, exchange: string, routingKey: string, body: string | Uint8Array): void {
    this.sendMethod(channel, 'basic.publish', {
      reserved1: 0,
      exchange,
      routingKey,
      mandatory: false,
      immediate: false,
    });
    const w = new Writer();
    writeContent(w, channel, {}, typeof body === 'string' ? Buffer.from(body) : body, 131072);
    this.send(w.take());
  }

  /** Opens a channel and waits for open-ok. */
  async openChannel(channel: number): Promise<void> {
    this.sendMethod(channel, 'channel.open', { outOfBand: '' });
    await this.method('channel.open-ok', channel);
  }

  /** Waits for the next method `name` (on `channel`, when given) and removes it from the list. */
  async method(name: MethodName, channel?: number): Promise<Method> {
    const frame = await this.#take(
      (f) => f.method?.name === name && (channel === undefined || f.channel === channel),
      `method ${name}`,
    );
    return frame.method!;
  }

  /** Waits for a frame matching `match`. */
  frame(match: (frame: Frame) => boolean, what: string): Promise<Frame> {
    return this.#take(match, what);
  }

  /** Waits until the server closed the socket. */
  async waitClosed(): Promise<void> {
    await this.#until(() => this.closed, 'the socket to close');
  }

  /** Waits until `raw` holds `n` bytes. */
  async waitRaw(n: number): Promise<void> {
    await this.#until(() => this.raw.length >= n || this.closed, `${n} raw bytes`);
  }

  /** Stops reading the socket (the server's writes then back up), or reads again. */
  reading(on: boolean): void {
    if (on) this.#socket.resume();
    else this.#socket.pause();
  }

  /** Counts the received frames that match, without removing them. */
  count(match: (frame: Frame) => boolean): number {
    return this.frames.filter(match).length;
  }

  destroy(): void {
    this.#socket.destroy();
  }

  async #take(match: (frame: Frame) => boolean, what: string): Promise<Frame> {
    let found: Frame | undefined;
    await this.#until(() => {
      const at = this.frames.findIndex(match);
      if (at >= 0) [found] = this.frames.splice(at, 1);
      return found !== undefined || this.closed;
    }, what);
    if (!found) {
      const seen = this.frames.map((f) => f.method?.name ?? `frame type ${f.type}`).join(', ');
      throw new Error(`socket closed before ${what}; frames: ${seen}`);
    }
    return found;
  }

  async #until(done: () => boolean, what: string): Promise<void> {
    const end = Date.now() + DEADLINE_MS;
    while (!done()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  #onData(chunk: Buffer): void {
    this.received.push(chunk);
    if (!this.#framing) {
      // The server's first bytes are a frame, or a protocol header when it refuses ours.
      if (chunk[0] === 0x41) {
        this.raw = Buffer.concat([this.raw, chunk]);
        this.#wake();
        return;
      }
      this.#framing = true;
    }
    this.#parser.push(chunk, (type, channel, bytes, start, end) => {
      const copy = Buffer.from(bytes.subarray(start, end));
      let method: Method | undefined;
      if (type === FRAME_METHOD) {
        const r = new Reader(copy);
        const def = methodById(r.u16(), r.u16());
        if (def) method = readArgs(r, def);
      }
      this.frames.push({ type, channel, payload: copy, ...(method && { method }) });
      return true;
    });
    this.#wake();
  }
}

/**
 * Checks that `bytes` are whole, valid frames and nothing else: each frame's type, size and end
 * marker, each method's arguments exactly, each content header's properties, and body frames
 * adding up to the size their header announced. Returns the frames' names (a method's, or
 * `header`, `body`, `heartbeat`).
 * @throws Error naming the first byte that is not part of a valid frame.
 */
export function wellFormed(bytes: Buffer): string[] {
  const names: string[] = [];
  let bodyLeft = 0;
  let at = 0;
  while (at < bytes.length) {
    if (bytes.length - at < 8) throw new Error(`a partial frame at byte ${at} (the last)`);
    const type = bytes[at]!;
    const size = bytes.readUInt32BE(at + 3);
    const end = at + 7 + size;
    if (end >= bytes.length) throw new Error(`a frame at byte ${at} ends past the output`);
    if (bytes[end] !== 0xce) throw new Error(`the frame at byte ${at} has no end marker`);
    const r = new Reader(bytes, at + 7, end);
    if (type === FRAME_METHOD) {
      if (bodyLeft > 0) throw new Error(`a method frame at byte ${at} cuts a body short`);
      const def = methodById(r.u16(), r.u16());
      if (!def) throw new Error(`an unknown method at byte ${at}`);
      readArgs(r, def);
      names.push(def.name);
    } else if (type === 2) {
      bodyLeft = readContentHeader(r).bodySize;
      names.push('header');
    } else if (type === 3) {
      bodyLeft -= size;
      if (bodyLeft < 0) throw new Error(`a body frame at byte ${at} runs past its content`);
      r.pos = end;
      names.push('body');
    } else if (type === 8) {
      names.push('heartbeat');
    } else {
      throw new Error(`a frame of type ${type} at byte ${at}`);
    }
    if (r.remaining !== 0) throw new Error(`the frame at byte ${at} has ${r.remaining} bytes over`);
    at = end + 1;
  }
  if (bodyLeft > 0) throw new Error('the output ends inside a content');
  return names;
}

/** A method frame's bytes with arbitrary ids and payload. */
export function rawMethodFrame(
  channel: number,
  classId: number,
  methodId: number,
  rest = Buffer.alloc(0),
): Buffer {
  const payload = Buffer.alloc(4 + rest.length);
  payload.writeUInt16BE(classId, 0);
  payload.writeUInt16BE(methodId, 2);
  rest.copy(payload, 4);
  return rawFrame(1, channel, payload);
}

/** A frame of any type around `payload`. */
export function rawFrame(
  type: number,
  channel: number,
  payload: Buffer,
  size = payload.length,
): Buffer {
  const frame = Buffer.alloc(8 + payload.length);
  frame[0] = type;
  frame.writeUInt16BE(channel, 1);
  frame.writeUInt32BE(size, 3);
  payload.copy(frame, 7);
  frame[7 + payload.length] = 0xce;
  return frame;
}
