/**
 * `startBroker()`: a broker served over AMQP for a test, in one call: its URL, its clock, its
 * storage (memory, or a temporary directory removed by `stop()`), its faults and `restart()`, and
 * with `management` RabbitMQ's management HTTP API (and the dashboard) beside it.
 * Shaped as testcontainers' RabbitMQ module (`new RabbitMQContainer(image).start()`, then
 * `getAmqpUrl()`), so a suite written for it changes its import and the line that starts it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker } from '../../broker/broker.js';
import type { BrokerOptions } from '../../broker/broker-options.js';
import { faultChannel } from '../../diagnostics.js';
import { ClosedError } from '../../errors.js';
import type { ManagementOptions } from '../../management/http-server.js';
import { listen, type Server, type ServerOptions } from '../../management/listen.js';
import { ServerFaults } from '../../server/faults.js';
import { fsStorage } from '../../storage/fs/index.js';
import { memoryStorage } from '../../storage/memory.js';
import type { StorageAdapter } from '../../storage/types.js';
import { ManualClock } from '../manual-clock.js';

/** The AMQP port a RabbitMQ container exposes, which `getMappedPort()` maps. */
const AMQP_PORT = 5672;
/** The management port of a RabbitMQ container (`rabbitmq:management` images). */
const MANAGEMENT_PORT = 15672;

/** Options of {@link startBroker}. */
export interface StartBrokerOptions {
  /**
   * `'memory'` (the default): nothing survives `restart()`, as transient queues on a RabbitMQ
   * node; `'fs'`: a temporary directory, durable state comes back after `restart()`, removed by
   * `stop()`; or `{ dir }`: that directory, kept.
   */
  storage?: 'memory' | 'fs' | { readonly dir: string };
  /**
   * `true`: a new `ManualClock` drives the broker's time-based rules and the server's heartbeats;
   * or the `ManualClock` to use. Default: the system clock.
   */
  clock?: boolean | ManualClock;
  /** TCP port (default 0: a free one); `restart()` listens on the same. */
  port?: number;
  /** Broker options besides storage and clock (config, definitions, strict, ...). */
  broker?: Omit<BrokerOptions, 'storage' | 'clock'>;
  /**
   * `true`: RabbitMQ's management HTTP API, Prometheus metrics and the dashboard on a free port
   * of loopback (`getManagementUrl()`); or their options. `restart()` keeps the port.
   */
  management?: boolean | ManagementOptions;
  /** Server options besides port, clock, faults and management (users, heartbeat, limits, ...). */
  server?: Omit<ServerOptions, 'port' | 'clock' | 'faults' | 'management'>;
}

/** A running broker and its AMQP server, from {@link startBroker}. */
export interface StartedBroker extends AsyncDisposable {
  /** `amqp://guest:guest@127.0.0.1:<port>` (or with the first user of `server.users`). */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** The broker served now (a new one after each `restart()`). */
  readonly broker: Broker;
  /** The `ManualClock`, when `clock` asked for one. */
  readonly clock: ManualClock | undefined;
  /** The data directory of fs storage; undefined for memory. */
  readonly dir: string | undefined;
  /** Faults to inject: connections closed, dropped, refused, delayed, stalled; channels closed; publishers blocked. */
  readonly faults: ServerFaults;
  /** `http://127.0.0.1:<port>` of the management API, when `management` asked for it. */
  readonly managementUrl: string | undefined;
  /** The AMQP URL, as testcontainers' `StartedRabbitMQContainer.getAmqpUrl()`. */
  getAmqpUrl(): string;
  getHost(): string;
  /**
   * The port serving AMQP (the container's 5672, as testcontainers maps it), or with
   * `management` the management API's (15672).
   */
  getMappedPort(port?: number): number;
  /**
   * The management API's URL, as a RabbitMQ container's management port gives it.
   *
   * @throws RangeError when `management` was not asked for.
   */
  getManagementUrl(): string;
  getFirstMappedPort(): number;
  /**
   * Closes every connection (320 CONNECTION_FORCED, 'shutdown'), closes the broker, reopens it on
   * the same storage and listens on the same port again.
   */
  restart(): Promise<void>;
  /** Closes the server and the broker, and removes a temporary directory. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts a broker served over AMQP for a test.
 *
 * ```ts
 * await using rabbit = await startBroker();
 * const connection = await amqplib.connect(rabbit.getAmqpUrl());
 * ```
 */
export function startBroker(
  options: StartBrokerOptions & { clock: true | ManualClock },
): Promise<StartedBroker & { readonly clock: ManualClock }>;
export function startBroker(options?: StartBrokerOptions): Promise<StartedBroker>;
export async function startBroker(options: StartBrokerOptions = {}): Promise<StartedBroker> {
  const clock =
    options.clock === true ? new ManualClock() : options.clock ? options.clock : undefined;
  const storage = options.storage ?? 'memory';
  const temporary = storage === 'fs';
  const dir =
    storage === 'memory'
      ? undefined
      : temporary
        ? await mkdtemp(join(tmpdir(), 'mqlite-test-'))
        : storage.dir;
  const faults = new ServerFaults();
  const timed = clock ? { clock } : {};
  let stopped = false;
  const managementOptions =
    options.management === true ? {} : options.management ? options.management : undefined;
  let managementPort = managementOptions?.port ?? 0;
  const open = async (port: number): Promise<[Broker, Server]> => {
    const adapter: StorageAdapter = dir === undefined ? memoryStorage() : fsStorage({ dir });
    const broker = await Broker.open({ ...options.broker, storage: adapter, ...timed });
    const management = managementOptions && { ...managementOptions, port: managementPort };
    try {
      const served = await listen(broker, {
        ...options.server,
        port,
        ...timed,
        faults,
        ...(management && { management }),
      });
      return [broker, served];
    } catch (error) {
      await broker.close();
      throw error;
    }
  };
  let broker: Broker;
  let server: Server;
  try {
    [broker, server] = await open(options.port ?? 0);
  } catch (error) {
    if (temporary && dir !== undefined) await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const { host, port, url, managementUrl } = server;
  if (managementUrl !== undefined) managementPort = Number(new URL(managementUrl).port);
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopped = true;
    stopping ??= (async () => {
      await server.close();
      await broker.close();
      if (temporary && dir !== undefined) await rm(dir, { recursive: true, force: true });
    })();
    return stopping;
  };
  return {
    url,
    host,
    port,
    get broker() {
      return broker;
    },
    clock,
    dir,
    faults,
    managementUrl,
    getAmqpUrl: () => url,
    getHost: () => host,
    getMappedPort(wanted = AMQP_PORT) {
      if (wanted === AMQP_PORT) return port;
      if (wanted === MANAGEMENT_PORT && managementUrl !== undefined) return managementPort;
      throw new RangeError(
        managementUrl === undefined
          ? `only AMQP's port ${AMQP_PORT} is served (management: true serves ${MANAGEMENT_PORT} too)`
          : `only AMQP's port ${AMQP_PORT} and the management port ${MANAGEMENT_PORT} are served`,
      );
    },
    getManagementUrl() {
      if (managementUrl === undefined) {
        throw new RangeError(
          'the management API is not served: start the broker with management: true',
        );
      }
      return managementUrl;
    },
    getFirstMappedPort: () => port,
    async restart() {
      if (stopped) throw new ClosedError('the broker was stopped: it cannot restart');
      if (faultChannel.hasSubscribers) faultChannel.publish({ fault: 'restart' });
      await server.close();
      await broker.close();
      [broker, server] = await open(port);
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * testcontainers' shape: `await new MqliteContainer().start()` where a suite had
 * `await new RabbitMQContainer(image).start()`.
 */
export class MqliteContainer {
  readonly #options: StartBrokerOptions;
  constructor(options: StartBrokerOptions = {}) {
    this.#options = options;
  }

  /** Starts the broker: {@link startBroker} with the options given to the constructor. */
  start(): Promise<StartedBroker> {
    return startBroker(this.#options);
  }
}
