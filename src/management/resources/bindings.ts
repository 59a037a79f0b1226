/**
 * Bindings: every binding of a vhost (the default exchange's implicit ones first, as RabbitMQ
 * lists them), those of a queue or exchange, and creating (POST, 201 with `Location`) and
 * deleting them by their `properties_key`.
 */
import { createHash } from 'node:crypto';
import type { Broker } from '../../broker/broker.js';
import type { FieldTable } from '../../message/types.js';
import type { ManagementContext } from '../context.js';
import { attempt, badRequest, notFound } from '../http-error.js';
import { field } from '../request-body.js';
import type { ApiAnswer, ApiRequest, Route } from '../router.js';
import { exchangeName } from './exchanges.js';
import { listedVhosts, param, vhostBroker } from './visible.js';

type Kind = 'queue' | 'exchange';

interface Binding {
  readonly source: string;
  readonly destination: string;
  readonly destinationType: Kind;
  readonly routingKey: string;
  readonly args: Readonly<FieldTable>;
}

/**
 * The key naming a binding in paths, as RabbitMQ makes it: its routing key quoted (`~` when
 * empty), and a digest of its arguments when it has some (RabbitMQ digests them with Erlang's
 * hash; this names the same bindings with other characters).
 */
export function propertiesKey(routingKey: string, args: Readonly<FieldTable>): string {
  const key = routingKey === '' ? '~' : quote(routingKey);
  if (Object.keys(args).length === 0) return key;
  const digest = createHash('sha256').update(JSON.stringify(args)).digest('base64url').slice(0, 6);
  return `${routingKey === '' ? '' : key}~${digest}`;
}

/** Every byte but letters, digits, `-`, `_` and `.` as `%XX`, as the plugin quotes keys. */
function quote(text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((byte) => {
      const c = String.fromCharCode(byte);
      return /[A-Za-z0-9_.-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');
}

function bindingJson(vhost: string, b: Binding) {
  return {
    source: b.source,
    vhost,
    destination: b.destination,
    destination_type: b.destinationType,
    routing_key: b.routingKey,
    arguments: b.args,
    properties_key: propertiesKey(b.routingKey, b.args),
  };
}

/** The default exchange's binding of a queue: its name as the key. */
function implicit(queue: string): Binding {
  return { source: '', destination: queue, destinationType: 'queue', routingKey: queue, args: {} };
}

function allOf(broker: Broker): Binding[] {
  const defaults = broker.queues().map((q) => implicit(q.name));
  const explicit = broker
    .exchanges()
    .flatMap((e) => broker.bindingsFrom(e.name).map((b) => ({ source: e.name, ...b })));
  return [...defaults, ...explicit];
}

function to(broker: Broker, destination: string, kind: Kind): Binding[] {
  const explicit = broker
    .bindings(destination, kind)
    .map((b) => ({ ...b, destination, destinationType: kind }));
  return kind === 'queue' ? [implicit(destination), ...explicit] : explicit;
}

function from(broker: Broker, source: string): Binding[] {
  return broker.bindingsFrom(source).map((b) => ({ source, ...b }));
}

const answer = (vhost: string, bindings: readonly Binding[]): ApiAnswer => ({
  status: 200,
  json: bindings.map((b) => bindingJson(vhost, b)),
});

function exists(broker: Broker, name: string, kind: Kind): boolean {
  return kind === 'queue' ? broker.hasQueue(name) : broker.exchangeNamed(name) !== undefined;
}

/** The bindings between the path's source and destination, both checked to exist. */
function between(request: ApiRequest, context: ManagementContext, kind: Kind) {
  const broker = vhostBroker(context, request, false);
  const source = exchangeName(request, 'source');
  const destination =
    kind === 'exchange' ? exchangeName(request, 'destination') : param(request, 'destination');
  if (broker.exchangeNamed(source) === undefined || !exists(broker, destination, kind)) {
    throw notFound();
  }
  const bindings = to(broker, destination, kind).filter((b) => b.source === source);
  return { broker, source, destination, bindings };
}

function bindingsBetween(kind: Kind) {
  return {
    GET: {
      level: 'management' as const,
      handle: (request: ApiRequest, context: ManagementContext) => {
        const { broker, bindings } = between(request, context, kind);
        return answer(broker.vhost, bindings);
      },
    },
    POST: {
      level: 'management' as const,
      handle: async (request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> => {
        const { broker, source, destination } = between(request, context, kind);
        const body = await request.body();
        const routingKey = field(body, 'routing_key', 'string', '');
        const args = field<FieldTable>(body, 'arguments', 'object', {});
        if (source === '') throw badRequest('access_refused: cannot bind to the default exchange');
        await attempt(async () => {
          if (kind === 'queue') {
            const queue = await broker.queue(destination, { passive: true });
            await queue.bind(source, routingKey, args);
          } else {
            await broker.bindExchange(destination, source, routingKey, args);
          }
        });
        // Relative to the path, as the plugin's: the destination, then the key.
        const location = `${encodeURIComponent(destination)}/${encodeURIComponent(propertiesKey(routingKey, args))}`;
        return { status: 201, headers: { location } };
      },
    },
  };
}

function bindingByKey(kind: Kind) {
  const find = (request: ApiRequest, context: ManagementContext) => {
    const found = between(request, context, kind);
    const key = param(request, 'props');
    const binding = found.bindings.find((b) => propertiesKey(b.routingKey, b.args) === key);
    if (!binding) throw notFound();
    return { ...found, binding };
  };
  return {
    GET: {
      level: 'management' as const,
      handle: (request: ApiRequest, context: ManagementContext): ApiAnswer => {
        const { broker, binding } = find(request, context);
        return { status: 200, json: bindingJson(broker.vhost, binding) };
      },
    },
    DELETE: {
      level: 'management' as const,
      handle: async (request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> => {
        const { broker, binding, source, destination } = find(request, context);
        if (source === '')
          throw badRequest('access_refused: cannot unbind from the default exchange');
        await attempt(async () => {
          if (kind === 'queue') {
            const queue = await broker.queue(destination, { passive: true });
            await queue.unbind(source, binding.routingKey, binding.args);
          } else {
            await broker.unbindExchange(destination, source, binding.routingKey, binding.args);
          }
        });
        return { status: 204 };
      },
    },
  };
}

/** The bindings of the path's queue or exchange, which must exist. */
function bindingsOf(kind: Kind, list: (broker: Broker, name: string) => Binding[]) {
  return {
    GET: {
      level: 'management' as const,
      handle: (request: ApiRequest, context: ManagementContext) => {
        const broker = vhostBroker(context, request, false);
        const name = kind === 'queue' ? param(request, 'name') : exchangeName(request);
        if (!exists(broker, name, kind)) throw notFound();
        return answer(broker.vhost, list(broker, name));
      },
    },
  };
}

export const bindingRoutes: readonly Route[] = [
  {
    path: '/api/bindings',
    methods: {
      GET: {
        level: 'management',
        handle: (request, context) => ({
          status: 200,
          json: listedVhosts(context, request).flatMap((vhost) =>
            allOf(context.broker(vhost)).map((b) => bindingJson(vhost, b)),
          ),
        }),
      },
    },
  },
  {
    path: '/api/bindings/:vhost',
    methods: {
      GET: {
        level: 'management',
        handle: (request, context) => {
          const broker = vhostBroker(context, request, false);
          return answer(broker.vhost, allOf(broker));
        },
      },
    },
  },
  {
    path: '/api/queues/:vhost/:name/bindings',
    methods: bindingsOf('queue', (b, n) => to(b, n, 'queue')),
  },
  { path: '/api/exchanges/:vhost/:name/bindings/source', methods: bindingsOf('exchange', from) },
  {
    path: '/api/exchanges/:vhost/:name/bindings/destination',
    methods: bindingsOf('exchange', (b, n) => to(b, n, 'exchange')),
  },
  { path: '/api/bindings/:vhost/e/:source/q/:destination', methods: bindingsBetween('queue') },
  { path: '/api/bindings/:vhost/e/:source/e/:destination', methods: bindingsBetween('exchange') },
  { path: '/api/bindings/:vhost/e/:source/q/:destination/:props', methods: bindingByKey('queue') },
  {
    path: '/api/bindings/:vhost/e/:source/e/:destination/:props',
    methods: bindingByKey('exchange'),
  },
];
