/**
 * The brokers the dashboard is shown against: mqlite's management listener, which serves it, and
 * RabbitMQ's management plugin (its API behind a listener that serves the dashboard's files, as
 * the plugin's own UI is served beside it).
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Broker } from '../../../src/broker/broker.js';
import { serveDashboard } from '../../../src/management/dashboard/dashboard-files.js';
import { listen, type Server as MqliteServer } from '../../../src/server/index.js';

export interface DashboardTarget {
  readonly name: string;
  /** Why the page cannot be shown against it here, or undefined. */
  readonly missing?: string;
  /** Starts what the page needs; the dashboard's address. */
  start(): Promise<string>;
  stop(): Promise<void>;
  amqpUrl(): string;
}

const RABBITMQ_API = new URL(process.env.RABBITMQ_MANAGEMENT_URL ?? 'http://127.0.0.1:15672');

/** The dashboard's files, and everything under /api/ passed to RabbitMQ's management plugin. */
async function rabbitmq(): Promise<DashboardTarget> {
  let server: Server | undefined;
  const answers = await fetch(new URL('/api/overview', RABBITMQ_API), {
    signal: AbortSignal.timeout(5000),
  }).then(
    (response) => response.status === 401,
    () => false,
  );
  return {
    name: 'RabbitMQ',
    ...(answers
      ? {}
      : { missing: `RabbitMQ's management plugin does not answer at ${RABBITMQ_API.origin}` }),
    amqpUrl: () => process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
    async start() {
      server = createServer((req, res) => {
        if (!req.url?.startsWith('/api/')) {
          if (!serveDashboard(req, res)) res.writeHead(404).end();
          return;
        }
        const upstream = request(
          {
            host: RABBITMQ_API.hostname,
            port: RABBITMQ_API.port,
            path: req.url,
            method: req.method,
            headers: req.headers,
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        upstream.on('error', (error) => res.destroy(error));
        req.pipe(upstream);
      });
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    },
    async stop() {
      server?.closeAllConnections();
      await new Promise((resolve) => server?.close(resolve));
    },
  };
}

/** `listen()` with the management listener, on ephemeral ports, as an application starts it. */
function mqlite(): DashboardTarget {
  let broker: Broker | undefined;
  let server: MqliteServer | undefined;
  return {
    name: 'mqlite',
    amqpUrl: () => server!.url,
    async start() {
      broker = await Broker.open();
      server = await listen(broker, { port: 0, management: { port: 0 } });
      return `${server.managementUrl}/`;
    },
    async stop() {
      await server?.close();
      await broker?.close();
    },
  };
}

export async function dashboardTargets(): Promise<DashboardTarget[]> {
  return [mqlite(), await rabbitmq()];
}
