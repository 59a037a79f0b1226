/**
 * Shovels, as RabbitMQ 3.10 serves them: their definitions as the `shovel` runtime parameters
 * (`/api/parameters/shovel[/{vhost}[/{name}]]`: GET, PUT `{"value": {...}}`, DELETE), and their
 * states as the shovel management plugin reports them (`/api/shovels[/{vhost}]`,
 * `/api/shovels/vhost/{vhost}/{name}`: GET, and DELETE, which deletes the shovel as 3.10's plugin
 * does; `DELETE .../{name}/restart` restarts it, as later plugins do). A running shovel's state
 * is as 4.x reports it: its counts, and `running`, `flow` or `blocked`.
 */
import type { Broker } from '../../broker/broker.js';
import {
  type ShovelDefinition,
  ShovelDefinitionError,
  withoutCredentials,
} from '../../broker/shovel-definition.js';
import type { ShovelParameter, ShovelStatus } from '../../broker/shovel-host.js';
import type { ManagementContext } from '../context.js';
import { attempt, badRequest, fromBrokerError, notFound } from '../http-error.js';
import type { Action, ApiAnswer, ApiRequest, Route } from '../router.js';
import { listedVhosts, listing, param, vhostBroker } from './visible.js';

/**
 * A shovel's state, its fields in the order the plugin writes them. When running, 4.x puts its
 * counts (a map, listed in key order) before `state`, which is then its blocked status, repeated
 * last as `blocked_status`.
 */
function format(
  context: ManagementContext,
  status: ShovelStatus,
  definition: ShovelDefinition | undefined,
): Record<string, unknown> {
  const json: Record<string, unknown> = {
    node: context.node,
    timestamp: timestamp(status.since),
    name: status.name,
    vhost: status.vhost,
    type: status.type,
  };
  const running = status.state === 'running' && definition !== undefined;
  if (running) {
    json.forwarded = status.published;
    json.pending = status.held;
    json.remaining = status.remaining;
    json.remaining_unacked = status.remainingUnacked;
  }
  json.state = running ? (status.blockedStatus ?? 'running') : status.state;
  if (status.state === 'terminated') json.reason = status.reason ?? '';
  if (!running) return json;
  json.src_uri = withoutCredentials(status.source);
  json.src_protocol = 'amqp091';
  json.dest_protocol = 'amqp091';
  json.dest_uri = withoutCredentials(status.destination);
  if (definition['src-queue'] !== undefined) json.src_queue = definition['src-queue'];
  else {
    json.src_exchange = definition['src-exchange'];
    json.src_exchange_key = definition['src-exchange-key'] ?? '#';
  }
  for (const key of ['dest-exchange', 'dest-exchange-key', 'dest-queue'] as const) {
    if (definition[key] !== undefined) json[key.replace(/-/g, '_')] = definition[key];
  }
  json.blocked_status = json.state;
  return json;
}

/** `YYYY-MM-DD HH:MM:SS` in the node's local time, as the plugin writes a state's time. */
function timestamp(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${d.getHours()}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

async function states(
  context: ManagementContext,
  broker: Broker,
  name?: string,
): Promise<Record<string, unknown>[]> {
  const definitions = new Map(broker.shovelParameters().map((p) => [p.name, p.value]));
  const statuses = await broker.shovels();
  return statuses
    .filter((s) => name === undefined || s.name === name)
    .map((s) => format(context, s, definitions.get(s.name)));
}

async function listStates(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const json: unknown[] = [];
  for (const vhost of listedVhosts(context, request)) {
    json.push(...(await states(context, context.broker(vhost))));
  }
  return { status: 200, json };
}

/** A list (the plugin answers the named shovel with a list), 404 when there is no such shovel. */
async function oneState(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, false);
  const json = await states(context, broker, param(request, 'name'));
  if (json.length === 0) throw notFound();
  return { status: 200, json };
}

function parameter(p: ShovelParameter): Record<string, unknown> {
  return { value: p.value, vhost: p.vhost, component: p.component, name: p.name };
}

function oneParameter(request: ApiRequest, context: ManagementContext): ApiAnswer {
  const broker = vhostBroker(context, request, false);
  const name = param(request, 'name');
  const found = broker.shovelParameters().find((p) => p.name === name);
  if (found === undefined) throw notFound();
  return { status: 200, json: parameter(found) };
}

async function putParameter(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  const name = param(request, 'name');
  const body = await request.body();
  if (!Object.hasOwn(body, 'value')) throw badRequest('[{key_missing,value}]');
  const existed = broker.shovelParameters().some((p) => p.name === name);
  try {
    await broker.setShovel(name, body.value as ShovelDefinition);
  } catch (error) {
    if (error instanceof ShovelDefinitionError) throw badRequest(validationFailed(error));
    throw fromBrokerError(error);
  }
  return { status: existed ? 204 : 201 };
}

/** The reason the plugin gives a refused definition: its words, `<` and `>` escaped for HTML. */
function validationFailed(error: ShovelDefinitionError): string {
  const detail = error.message.replace(/^.*?Validation failed: /s, '');
  const escaped = detail.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return `Validation failed\n\n${escaped}\n`;
}

async function deleteShovel(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  await attempt(() => broker.clearShovel(param(request, 'name')));
  return { status: 204 };
}

async function restartShovel(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  await attempt(() => broker.restartShovel(param(request, 'name')));
  return { status: 204 };
}

const listParameters: Action = {
  level: 'policymaker',
  handle: (request, context) =>
    listing(context, request, (broker) => broker.shovelParameters().map(parameter)),
};

export const shovelRoutes: readonly Route[] = [
  { path: '/api/parameters/shovel', methods: { GET: listParameters } },
  { path: '/api/parameters/shovel/:vhost', methods: { GET: listParameters } },
  {
    path: '/api/parameters/shovel/:vhost/:name',
    methods: {
      GET: { level: 'policymaker', handle: oneParameter },
      PUT: { level: 'policymaker', handle: putParameter },
      DELETE: { level: 'policymaker', handle: deleteShovel },
    },
  },
  { path: '/api/shovels', methods: { GET: { level: 'monitoring', handle: listStates } } },
  { path: '/api/shovels/:vhost', methods: { GET: { level: 'monitoring', handle: listStates } } },
  {
    path: '/api/shovels/vhost/:vhost/:name',
    methods: {
      GET: { level: 'monitoring', handle: oneState },
      DELETE: { level: 'policymaker', handle: deleteShovel },
    },
  },
  {
    path: '/api/shovels/vhost/:vhost/:name/restart',
    methods: { DELETE: { level: 'policymaker', handle: restartShovel } },
  },
];
