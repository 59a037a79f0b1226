/**
 * `listen()` of `mqlite/server`: the AMQP server, and with the `management` option the
 * management HTTP listener on top of it, closed with it. The AMQP server knows nothing of the
 * management layer: this composes the two.
 */
import type { Broker } from '../broker/broker.js';
import { type AmqpServer, type ListenOptions, startServer } from '../server/server.js';
import { type ManagementOptions, type ManagementServer, startManagement } from './http-server.js';
import { defaultStaticFiles } from './static-files.js';

/** Options of `listen()` with the management listener. */
export interface ServerOptions extends ListenOptions {
  /**
   * Serve RabbitMQ's management HTTP API (and Prometheus metrics at `/metrics`) beside AMQP:
   * off unless given; on `127.0.0.1` unless `host` says otherwise. See README "Management HTTP
   * API and metrics".
   */
  management?: ManagementOptions;
}

/** A running server, with its management listener when it has one. */
export interface Server extends AmqpServer {
  /** `http://<host>:<port>` of the management API, when `management` was given. */
  readonly managementUrl: string | undefined;
  /** `http://<host>:<port>` of the Prometheus listener, when `management.prometheusPort` was given. */
  readonly prometheusUrl: string | undefined;
}

/**
 * Serves `broker` over AMQP 0-9-1, as the vhost `/`, and with `management` the management API.
 *
 * ```ts
 * import { listen } from 'mqlite/server';
 * await using server = await listen(broker, { port: 0, management: { port: 15672 } });
 * const connection = await amqplib.connect(server.url);
 * ```
 *
 * @throws RangeError for an option out of range, a vhost of `users` no broker serves, or a broker
 *   whose `vhost` is not the one it is served as; the listen error of a port in use.
 */
export async function listen(broker: Broker, options: ServerOptions = {}): Promise<Server> {
  const { management, ...amqp } = options;
  const { server, state } = await startServer(broker, amqp);
  const listeners: ManagementServer[] = [];
  try {
    if (management) {
      const staticFiles = management.staticFiles ?? defaultStaticFiles;
      listeners.push(
        await startManagement(state, server, {
          ...management,
          ...(staticFiles && { staticFiles }),
        }),
      );
      if (management.prometheusPort !== undefined) {
        listeners.push(
          await startManagement(state, server, {
            ...management,
            port: management.prometheusPort,
            metricsOnly: true,
          }),
        );
      }
    }
  } catch (error) {
    await Promise.all(listeners.map((l) => l.close()));
    await server.close();
    throw error;
  }
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= Promise.all([...listeners.map((l) => l.close()), server.close()]).then(() => {});
    return closing;
  };
  return {
    url: server.url,
    host: server.host,
    port: server.port,
    tlsUrl: server.tlsUrl,
    tlsPort: server.tlsPort,
    get connections() {
      return server.connections;
    },
    alarms: () => server.alarms(),
    managementUrl: management ? listeners[0]!.url : undefined,
    prometheusUrl: management?.prometheusPort !== undefined ? listeners[1]!.url : undefined,
    close,
    [Symbol.asyncDispose]: close,
  };
}
