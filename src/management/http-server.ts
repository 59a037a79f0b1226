/**
 * The management listener: an HTTP server beside the AMQP one serving RabbitMQ's management
 * API under `/api`, Prometheus metrics under `/metrics`, and anything else through the
 * `staticFiles` hook. Every `/api` request is authenticated first, then routed; an error is
 * answered as the plugin answers it, and never reaches the AMQP side.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AmqpServer, ServedState } from '../server/server.js';
import { authenticate, requireLevel } from './auth.js';
import { ManagementContext } from './context.js';
import { HttpError } from './http-error.js';
import { metricsAnswer } from './metrics/endpoint.js';
import { jsonObject, readBody } from './request-body.js';
import type { ApiAnswer } from './router.js';
import { apiRouter } from './routes.js';
import type { StaticFiles } from './static-files.js';

/** Where the management listener listens, and what it serves besides the API. */
export interface ManagementOptions {
  /** TCP port; 0 picks a free one (RabbitMQ's is 15672). */
  port?: number;
  /** Interface to listen on (default `127.0.0.1`). */
  host?: string;
  /** Answers requests outside `/api` and `/metrics` (the dashboard); without it they are 404. */
  staticFiles?: StaticFiles;
  /**
   * Also serve `/metrics` alone on a port of its own, as RabbitMQ's Prometheus plugin does on
   * 15692 (0 picks a free one).
   */
  prometheusPort?: number;
}

/** A running management listener. */
export interface ManagementServer {
  /** `http://<host>:<port>` */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Starts the management listener of a running server (with `metricsOnly`, the Prometheus
 * listener, serving `/metrics` alone).
 */
export async function startManagement(
  state: ServedState,
  server: AmqpServer,
  options: ManagementOptions & { metricsOnly?: boolean },
): Promise<ManagementServer> {
  const context = new ManagementContext(state, server);
  const host = options.host ?? '127.0.0.1';
  const http = createServer((request, response) => {
    answer(context, request, response, options.staticFiles, options.metricsOnly === true).catch(
      () => {
        if (!response.headersSent) response.writeHead(500);
        response.end();
      },
    );
  });
  // A keep-alive client (a browser) must not hold `close()` open.
  http.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const port = (http.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
      return closing;
    },
  };
}

async function answer(
  context: ManagementContext,
  request: IncomingMessage,
  response: ServerResponse,
  staticFiles: StaticFiles | undefined,
  metricsOnly: boolean,
): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const path = url.pathname;
  try {
    if (path === '/metrics' || path.startsWith('/metrics/')) {
      return send(
        request,
        response,
        metricsAnswer(context, request.method ?? 'GET', path, url.searchParams),
      );
    }
    if (metricsOnly || (path !== '/api' && !path.startsWith('/api/'))) {
      if (!metricsOnly && staticFiles && (await staticFiles(request, response))) return;
      throw new HttpError(404, 'Object Not Found', 'Not Found');
    }
    const user = authenticate(request, context.state.users, context.state.loopbackUsers);
    const { action, params } = apiRouter.find(request.method ?? 'GET', path);
    requireLevel(user, action.level);
    let body: Promise<Record<string, unknown>> | undefined;
    const result = await action.handle(
      {
        params,
        query: url.searchParams,
        user,
        headers: request.headers,
        body: () => (body ??= readBody(request).then(jsonObject)),
      },
      context,
    );
    send(request, response, result);
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    // The body may be unread: the connection must not be reused for what follows it.
    if (!request.complete) response.setHeader('connection', 'close');
    send(request, response, {
      status: error.status,
      headers: error.headers,
      ...(error.status === 405 || (error.status === 401 && error.reason === 'Not_Authorized')
        ? {}
        : { json: { error: error.error, reason: error.reason } }),
    });
  }
}

function send(request: IncomingMessage, response: ServerResponse, result: ApiAnswer): void {
  const headers: Record<string, string> = { vary: 'origin', ...result.headers };
  let body: string | undefined;
  if (result.text !== undefined) {
    body = result.text;
    headers['content-type'] ??= 'text/plain; version=0.0.4; charset=utf-8';
  } else if (result.json !== undefined) {
    body = JSON.stringify(result.json);
    headers['content-type'] = 'application/json';
  }
  headers['content-length'] = String(body === undefined ? 0 : Buffer.byteLength(body));
  response.writeHead(result.status, headers);
  response.end(request.method === 'HEAD' ? undefined : body);
}
