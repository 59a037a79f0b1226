/**
 * A TCP relay between the clients and mqlite's AMQP server that checks every byte the server
 * writes is a whole, valid frame. It parses independently of the server's own frame code, so a
 * framing mistake there cannot hide itself here.
 */
import { createServer, type Socket, connect as tcpConnect } from 'node:net';

/** Frame types of AMQP 0-9-1: method, content header, content body, heartbeat. */
const FRAME_TYPES = new Set([1, 2, 3, 8]);
const FRAME_END = 0xce;
/** What the server proposes in connection.tune (RabbitMQ's defaults), overhead included. */
const FRAME_MAX = 131_072;
const CHANNEL_MAX = 2047;

/** Checks one direction of one connection, chunk by chunk; records each problem once. */
export class FrameChecker {
  #pending: Buffer = Buffer.alloc(0);
  #frames = 0;
  #broken = false;
  readonly problems: string[] = [];
  readonly #label: string;

  constructor(label: string) {
    this.#label = label;
  }

  push(chunk: Buffer): void {
    if (this.#broken) return;
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    while (this.#pending.length >= 7) {
      const type = this.#pending.readUInt8(0);
      const channel = this.#pending.readUInt16BE(1);
      const size = this.#pending.readUInt32BE(3);
      const problem = headerProblem(type, channel, size);
      if (this.#pending.length < size + 8 && problem === undefined) return;
      const end = this.#pending[size + 7];
      const wrong =
        problem ??
        (end === FRAME_END
          ? contentProblem(type, channel, this.#pending.subarray(7, size + 7))
          : `frame end ${end}, expected ${FRAME_END}`);
      if (wrong !== undefined) {
        this.#fail(wrong);
        return;
      }
      this.#frames++;
      this.#pending = this.#pending.subarray(size + 8);
    }
  }

  /** The connection ended: a partial frame left behind was written half. */
  end(): void {
    if (!this.#broken && this.#pending.length > 0) {
      this.#fail(`the connection ended inside a frame (${this.#pending.length} bytes of it)`);
    }
  }

  #fail(problem: string): void {
    this.#broken = true;
    this.problems.push(`${this.#label}: frame ${this.#frames + 1}: ${problem}`);
  }
}

function headerProblem(type: number, channel: number, size: number): string | undefined {
  if (!FRAME_TYPES.has(type)) return `unknown frame type ${type}`;
  if (channel > CHANNEL_MAX) return `channel ${channel} above channel-max ${CHANNEL_MAX}`;
  if (size + 8 > FRAME_MAX) return `size ${size} above frame-max ${FRAME_MAX}`;
  if (type === 8 && (channel !== 0 || size !== 0)) return 'a heartbeat not on channel 0, empty';
  return undefined;
}

function contentProblem(type: number, channel: number, payload: Buffer): string | undefined {
  if (type === 1 && payload.length < 4) return `a method frame of ${payload.length} bytes`;
  if (type === 2 && (payload.length < 14 || channel === 0)) {
    return `a content header of ${payload.length} bytes on channel ${channel}`;
  }
  if (type === 3 && channel === 0) return 'a content body on channel 0';
  return undefined;
}

/** A running relay: clients connect to `port`; `problems` lists what the server wrote wrong. */
export interface FrameTap {
  readonly port: number;
  problems(): string[];
  close(): Promise<void>;
}

/** Relays connections on a free local port to the server at `host:port`, checking its output. */
export async function tapFrames(host: string, port: number): Promise<FrameTap> {
  const checkers: FrameChecker[] = [];
  const sockets = new Set<Socket>();
  const relay = createServer((client) => {
    const checker = new FrameChecker(`connection ${checkers.length + 1}`);
    checkers.push(checker);
    const upstream = tcpConnect(port, host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      // A reset is the peer's business: the other side is closed with it.
      socket.on('error', () => undefined);
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      checker.push(chunk);
      client.write(chunk);
    });
    upstream.on('end', () => {
      checker.end();
      client.end();
    });
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const address = relay.address();
  if (address === null || typeof address === 'string') throw new Error('relay has no TCP port');
  return {
    port: address.port,
    problems: () => checkers.flatMap((c) => c.problems),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    },
  };
}
