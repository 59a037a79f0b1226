/**
 * What the management tests share: a memory broker served with its management listener on free
 * ports, and `api()`, a plain `fetch` of the API as guest.
 */
import { afterAll, beforeAll } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { listen, type Server, type ServerOptions } from '../../src/server/index.js';

export const RABBIT_API = process.env.RABBITMQ_MANAGEMENT_URL ?? 'http://127.0.0.1:15672';
export const RABBIT_AMQP = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

export interface Managed {
  broker: Broker;
  server: Server;
}

/** Opens a broker and serves it with management before the tests; closes both after them. */
export function managedBroker(options: ServerOptions = {}): Managed {
  const managed = {} as Managed;
  beforeAll(async () => {
    managed.broker = await Broker.open();
    managed.server = await listen(managed.broker, { management: { port: 0 }, ...options });
  });
  afterAll(async () => {
    await managed.server.close();
    await managed.broker.close();
  });
  return managed;
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly json: any;
}

export const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** A request to the API at `base` (guest/guest unless `headers` say otherwise). */
export async function api(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: basic('guest', 'guest'),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Whether RabbitMQ's management plugin answers at `RABBIT_API`. */
export async function rabbitManagementUp(): Promise<boolean> {
  try {
    const response = await fetch(`${RABBIT_API}/api/overview`, {
      headers: { authorization: basic('guest', 'guest') },
      signal: AbortSignal.timeout(5_000),
    });
    return response.status === 200;
  } catch {
    return false;
  }
}

/** Polls `check` until it holds, for up to `ms` (a real broker's statistics lag). */
export async function eventually(check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met before the deadline');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
