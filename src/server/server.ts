/**
 * `listen(broker, options)`: serves a broker over AMQP 0-9-1 on a TCP port, so any AMQP client
 * (amqplib, @cloudamqp/amqp-client, rabbitmq-client, other languages) connects to it unchanged.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Broker } from '../broker/broker.js';
import { type Clock, systemClock } from '../clock.js';
import { AmqpConnection, HEARTBEAT_SECONDS } from './connection.js';
import { ReplyAddresses } from './reply-to.js';

/** Options of `listen()`. */
export interface ListenOptions {
  /** TCP port; 0 (the default) picks a free one. */
  port?: number;
  /** Interface to listen on (default `127.0.0.1`). */
  host?: string;
  /** Accepted users and their passwords (default `{ guest: 'guest' }`). */
  users?: Readonly<Record<string, string>>;
  /** Heartbeat interval proposed to clients, in seconds (default 60, as RabbitMQ; 0: none). */
  heartbeat?: number;
  /** Clock of heartbeats and handshake timeouts (default: the system clock). */
  clock?: Clock;
}

/** A running AMQP server. */
export interface AmqpServer extends AsyncDisposable {
  /** `amqp://<user>:<password>@<host>:<port>` with the first configured user. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Connections open now. */
  readonly connections: number;
  /**
   * Stops accepting connections and closes every open one with 320 CONNECTION_FORCED, as a
   * broker shutting down does. The broker stays open. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Serves `broker` over AMQP 0-9-1.
 *
 * ```ts
 * import { listen } from 'mqlite/server';
 * await using server = await listen(broker, { port: 0 });
 * const connection = await amqplib.connect(server.url);
 * ```
 */
export async function listen(broker: Broker, options: ListenOptions = {}): Promise<AmqpServer> {
  const host = options.host ?? '127.0.0.1';
  const heartbeat = options.heartbeat ?? HEARTBEAT_SECONDS;
  if (!Number.isInteger(heartbeat) || heartbeat < 0 || heartbeat > 65535) {
    throw new RangeError(`heartbeat must be an integer 0..65535 seconds, got ${heartbeat}`);
  }
  const userTable = options.users ?? { guest: 'guest' };
  const users = new Map(Object.entries(userTable));
  if (users.size === 0) throw new RangeError('listen needs at least one user');
  const clock = options.clock ?? systemClock;
  const connections = new Set<AmqpConnection>();
  const replies = new ReplyAddresses();
  const server: Server = createServer((socket: Socket) => {
    if (broker.closed) {
      socket.destroy();
      return;
    }
    connections.add(
      new AmqpConnection(socket, {
        broker,
        clock,
        replies,
        users,
        heartbeat,
        handshakeTimeout: 10_000,
        onEnd: (connection) => connections.delete(connection),
      }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const [user, password] = users.entries().next().value as [string, string];
  const urlHost = host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all(
        [...connections].map((c) =>
          c.close(320, "broker forced connection closure with reason 'shutdown'"),
        ),
      );
      await stopped;
    })();
    return closing;
  };
  return {
    url: `amqp://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${urlHost}:${port}`,
    host,
    port,
    get connections() {
      return connections.size;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
