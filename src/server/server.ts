/**
 * `listen(broker, options)`: serves a broker over AMQP 0-9-1 on a TCP port, so any AMQP client
 * (amqplib, @cloudamqp/amqp-client, rabbitmq-client, other languages) connects to it unchanged.
 * More brokers can be served as further virtual hosts, and the same server can listen for TLS
 * (`amqps://`) on a port of its own.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TlsOptions } from 'node:tls';
import type { Broker } from '../broker/broker.js';
import { type Clock, systemClock } from '../clock.js';
import { isLoopback, Users } from './auth.js';
import { AmqpConnection, HEARTBEAT_SECONDS } from './connection.js';
import { type DiskAlarmOptions, diskAlarm } from './disk-alarm.js';
import { AmqpException } from './errors.js';
import type { ConnectionEvent } from './events.js';
import type { ServerFaults } from './faults.js';
import { type Limits, resolveLimits, type ServerLimits } from './limits.js';
import { type MemoryAlarmOptions, memoryAlarm } from './memory-alarm.js';
import { VhostCounts } from './message-counts.js';
import { ReplyAddresses } from './reply-to.js';
import { type ResourceAlarm, ResourceAlarms } from './resource-alarm.js';

/** Options of `listen()`. */
export interface ListenOptions {
  /** TCP port; 0 (the default) picks a free one. */
  port?: number;
  /** Interface to listen on (default `127.0.0.1`). */
  host?: string;
  /**
   * Accepted users: their plain passwords (default `{ guest: 'guest' }`, each user allowed in
   * every vhost), or {@link Users} read from RabbitMQ definitions.
   */
  users?: Readonly<Record<string, string>> | Users;
  /** Users who may log in from the loopback interface only (default `['guest']`, as RabbitMQ). */
  loopbackUsers?: readonly string[];
  /**
   * Brokers served as virtual hosts besides `/` (which is `broker`), by vhost name; each opened
   * with that name as its `vhost` option, so its errors name it.
   */
  vhosts?: Readonly<Record<string, Broker>>;
  /** Connection, channel, frame and message size limits (RabbitMQ's defaults). */
  limits?: ServerLimits;
  /** Also listen for AMQP over TLS: node's TLS options (`cert`, `key`, ...) and its `port`. */
  tls?: TlsOptions & { port?: number };
  /** Heartbeat interval proposed to clients, in seconds (default 60, as RabbitMQ; 0: none). */
  heartbeat?: number;
  /**
   * The memory alarm (RabbitMQ's `vm_memory_high_watermark`, default 0.4 of the machine's
   * memory): while the process uses more, publishing connections are blocked (see
   * guides/server.md, "Limits of the server").
   */
  memory?: MemoryAlarmOptions;
  /**
   * The disk alarm (RabbitMQ's `disk_free_limit`, default 50 MB) on the file system of `dir`:
   * while less is free, publishing connections are blocked. Off unless given.
   */
  disk?: DiskAlarmOptions;
  /** Clock of heartbeats, handshake timeouts and resource readings (default: the system clock). */
  clock?: Clock;
  /** Told when a client connects, opens a vhost and goes. */
  onConnection?: (event: ConnectionEvent) => void;
  /** Faults a test injects (`mqlite/testing/server` passes its own). */
  faults?: ServerFaults;
  /**
   * Count the messages clients publish, take and acknowledge, per queue and exchange (default
   * true): the management API's `message_stats` and the Prometheus message counters.
   */
  messageStats?: boolean;
}

/**
 * @internal What a running server serves, for the management layer that reports on it and
 * steers it.
 */
export interface ServedState {
  readonly brokers: ReadonlyMap<string, Broker>;
  readonly connections: ReadonlySet<AmqpConnection>;
  readonly users: Users;
  readonly loopbackUsers: ReadonlySet<string>;
  readonly clock: Clock;
  /** Message counters by vhost; empty when `messageStats` is off. */
  readonly counts: ReadonlyMap<string, VhostCounts>;
  readonly limits: Limits;
}

/** A running AMQP server. */
export interface AmqpServer extends AsyncDisposable {
  /**
   * `amqp://<user>:<password>@<host>:<port>` with the first user given by password, or
   * `amqp://<host>:<port>` for users from definitions.
   */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** `amqps://...` of the TLS listener, when there is one. */
  readonly tlsUrl: string | undefined;
  readonly tlsPort: number | undefined;
  /** Connections open now. */
  readonly connections: number;
  /**
   * The resource alarms in effect (memory, disk, as of their last readings), as RabbitMQ's
   * local-alarms health check reports them: empty when healthy.
   */
  alarms(): ResourceAlarm[];
  /**
   * Stops accepting connections and closes every open one with 320 CONNECTION_FORCED, as a
   * broker shutting down does. The brokers stay open. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Serves `broker` over AMQP 0-9-1, as the vhost `/`.
 *
 * ```ts
 * import { listen } from 'mqlite/server';
 * await using server = await listen(broker, { port: 0 });
 * const connection = await amqplib.connect(server.url);
 * ```
 *
 * @throws RangeError for an option out of range, a vhost of `users` no broker serves, or a broker
 *   whose `vhost` is not the one it is served as.
 */
export async function listen(broker: Broker, options: ListenOptions = {}): Promise<AmqpServer> {
  return (await startServer(broker, options)).server;
}

/** @internal `listen()`, also answering what it serves (see {@link ServedState}). */
export async function startServer(
  broker: Broker,
  options: ListenOptions = {},
): Promise<{ server: AmqpServer; state: ServedState }> {
  const host = options.host ?? '127.0.0.1';
  const heartbeat = options.heartbeat ?? HEARTBEAT_SECONDS;
  if (!Number.isInteger(heartbeat) || heartbeat < 0 || heartbeat > 65535) {
    throw new RangeError(`heartbeat must be an integer 0..65535 seconds, got ${heartbeat}`);
  }
  const limits = resolveLimits(options.limits);
  const brokers = new Map<string, Broker>([['/', broker], ...Object.entries(options.vhosts ?? {})]);
  const given = options.users ?? { guest: 'guest' };
  const users = given instanceof Users ? given : Users.fromPasswords(given, [...brokers.keys()]);
  if (users.names.length === 0) throw new RangeError('listen needs at least one user');
  for (const vhost of users.vhosts) {
    if (!brokers.has(vhost)) throw new RangeError(`vhost '${vhost}' has no broker to serve it`);
  }
  for (const [vhost, served] of brokers) {
    // Its errors name its vhost: serving it as another would have them name the wrong one.
    if (served.vhost !== vhost) {
      throw new RangeError(
        `the broker served as vhost '${vhost}' is vhost '${served.vhost}': open it with Broker.open({ vhost: '${vhost}' })`,
      );
    }
  }
  const loopbackUsers = new Set(options.loopbackUsers ?? ['guest']);
  const clock = options.clock ?? systemClock;
  const connections = new Set<AmqpConnection>();
  const counts = new Map<string, VhostCounts>(
    options.messageStats === false ? [] : [...brokers.keys()].map((v) => [v, new VhostCounts()]),
  );
  const replies = new ReplyAddresses();
  const watched = [memoryAlarm(options.memory ?? {})];
  if (options.disk) watched.push(diskAlarm(options.disk));
  const alarm = new ResourceAlarms(watched, clock, (blockedBy) => {
    for (const connection of connections) connection.setAlarm(blockedBy);
  });
  const faults = options.faults;
  faults?.attach(connections, alarm);
  const accept = (socket: Socket, tls: boolean) => {
    if (broker.closed) {
      socket.destroy();
      return;
    }
    if (faults && !faults.admit(socket)) return;
    const connection = new AmqpConnection(socket, {
      clock,
      replies,
      heartbeat,
      limits,
      tls,
      handshakeTimeout: 10_000,
      authenticate: (user, password) =>
        users.authenticate(user, password) &&
        (!loopbackUsers.has(user) || isLoopback(socket.remoteAddress)),
      openVhost: (user, vhost) => {
        // The connection opening counts itself among `connections`.
        if (connections.size > limits.maxConnections) {
          throw new AmqpException(
            530,
            `connection refused: node connection limit (${limits.maxConnections}) is reached`,
          );
        }
        faults?.open(user, vhost);
        const access = users.access(user, vhost);
        if (access === 'not-found') throw new AmqpException(530, `vhost ${vhost} not found`);
        if (access === 'refused') {
          throw new AmqpException(530, `access to vhost '${vhost}' refused for user '${user}'`);
        }
        return {
          broker: brokers.get(vhost)!,
          permissions: users.live(user, vhost),
          counts: counts.get(vhost),
        };
      },
      onEvent: options.onConnection,
      onEnd: (ended) => connections.delete(ended),
    });
    connection.setAlarm(alarm.blockedBy);
    connections.add(connection);
  };
  const servers: Server[] = [];
  try {
    const plain = createServer((socket) => accept(socket, false));
    servers.push(plain);
    const port = await bind(plain, options.port ?? 0, host);
    let tlsPort: number | undefined;
    if (options.tls) {
      const { port: wanted, ...tlsOptions } = options.tls;
      const secure = createTlsServer(tlsOptions, (socket) => accept(socket, true));
      servers.push(secure);
      tlsPort = await bind(secure, wanted ?? 0, host);
    }
    // Every message stored in a queue counts in its `publish`, in-process publishes included.
    // A queue or exchange deleted by anyone and declared again starts from 0, as on RabbitMQ.
    const stops = [...counts].flatMap(([vhost, vhostCounts]) => [
      brokers.get(vhost)!.onStored((queue) => {
        vhostCounts.queue(queue).publish++;
      }),
      brokers.get(vhost)!.onDeleted((kind, name) => vhostCounts.forget(kind, name)),
    ]);
    // A deleted user's connections are closed, as RabbitMQ closes them.
    stops.push(
      users.onDeleted((user) => {
        for (const connection of connections) {
          if (connection.user === user) {
            void connection.close(320, `user '${user}' is deleted`);
          }
        }
      }),
    );
    const server = served(servers, connections, alarm, stops, options.users, host, port, tlsPort);
    return {
      server,
      state: { brokers, connections, users, loopbackUsers, clock, counts, limits },
    };
  } catch (error) {
    alarm.stop();
    for (const server of servers) server.close();
    throw error;
  }
}

function bind(server: Server, port: number, host: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}

function served(
  servers: readonly Server[],
  connections: ReadonlySet<AmqpConnection>,
  alarm: ResourceAlarms,
  stops: readonly (() => void)[],
  given: ListenOptions['users'],
  host: string,
  port: number,
  tlsPort: number | undefined,
): AmqpServer {
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const first: [string, string] | undefined =
    given === undefined
      ? ['guest', 'guest']
      : given instanceof Users
        ? undefined
        : Object.entries(given)[0];
  const credentials = first
    ? `${encodeURIComponent(first[0])}:${encodeURIComponent(first[1])}@`
    : '';
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      alarm.stop();
      for (const stop of stops) stop();
      const stopped = servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
      await Promise.all(
        [...connections].map((c) =>
          c.close(320, "broker forced connection closure with reason 'shutdown'"),
        ),
      );
      await Promise.all(stopped);
    })();
    return closing;
  };
  return {
    url: `amqp://${credentials}${urlHost}:${port}`,
    host,
    port,
    tlsUrl: tlsPort === undefined ? undefined : `amqps://${credentials}${urlHost}:${tlsPort}`,
    tlsPort,
    get connections() {
      return connections.size;
    },
    alarms: () => alarm.alarms(),
    close,
    [Symbol.asyncDispose]: close,
  };
}
