/**
 * `GET /api/definitions`: the server's users (with their password hashes), vhosts and
 * permissions with every vhost's queues, exchanges, bindings and policies, in RabbitMQ's
 * definitions format (what `serve --users` and `Broker.open({ definitions })` read). `POST` adds
 * the users and permissions a definitions document holds to the server's and declares the rest
 * in the vhosts it names.
 */
import type { ManagementContext } from '../context.js';
import { attempt, notFound } from '../http-error.js';
import type { ApiAnswer, ApiRequest, Route } from '../router.js';
import { MANAGEMENT_VERSION } from './overview.js';
import { importAccess, userJson } from './users.js';

const SECTIONS = ['queues', 'exchanges', 'bindings', 'policies'] as const;

function exported(context: ManagementContext): ApiAnswer {
  const { users } = context.state;
  const json: Record<string, unknown> = {
    rabbit_version: MANAGEMENT_VERSION,
    rabbitmq_version: MANAGEMENT_VERSION,
    product_name: 'mqlite',
    product_version: MANAGEMENT_VERSION,
    users: users.users.map(userJson),
    vhosts: [...context.state.brokers.keys()].map((name) => ({ name })),
    permissions: [...users.grants],
    topic_permissions: [],
    parameters: [],
    global_parameters: [],
    ...Object.fromEntries(SECTIONS.map((s) => [s, [] as unknown[]])),
  };
  for (const broker of context.state.brokers.values()) {
    const defs = broker.exportDefinitions() as unknown as Record<string, unknown[]>;
    for (const section of SECTIONS) (json[section] as unknown[]).push(...(defs[section] ?? []));
  }
  return { status: 200, json };
}

async function imported(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const body = await request.body();
  const byVhost = new Map<string, Record<string, unknown[]>>();
  for (const section of SECTIONS) {
    const entries = Object.hasOwn(body, section) ? body[section] : undefined;
    if (!Array.isArray(entries)) continue;
    for (const entry of entries) {
      const vhost =
        typeof entry === 'object' &&
        entry !== null &&
        typeof (entry as { vhost?: unknown }).vhost === 'string'
          ? (entry as { vhost: string }).vhost
          : '/';
      let defs = byVhost.get(vhost);
      if (!defs) byVhost.set(vhost, (defs = {}));
      (defs[section] ??= []).push(entry);
    }
  }
  for (const vhost of byVhost.keys()) if (!context.state.brokers.has(vhost)) throw notFound();
  importAccess(body, context);
  await attempt(async () => {
    for (const [vhost, defs] of byVhost) await context.broker(vhost).importDefinitions(defs);
  });
  return { status: 204 };
}

export const definitionRoutes: readonly Route[] = [
  {
    path: '/api/definitions',
    methods: {
      GET: { level: 'administrator', handle: (_, context) => exported(context) },
      POST: { level: 'administrator', handle: imported },
    },
  },
];
