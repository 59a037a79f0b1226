/** Policies: each vhost's broker's, listed, set (PUT) and cleared (DELETE). */
import type { Policy, PolicyTarget } from '../../broker/policies.js';
import type { ManagementContext } from '../context.js';
import { attempt, badRequest, notFound } from '../http-error.js';
import { field } from '../request-body.js';
import type { ApiAnswer, ApiRequest, Route } from '../router.js';
import { listedVhosts, param, vhostBroker } from './visible.js';

function policiesOf(request: ApiRequest, context: ManagementContext): Policy[] {
  return listedVhosts(context, request).flatMap((vhost) => context.broker(vhost).policies());
}

async function setPolicy(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  const name = param(request, 'name');
  const body = await request.body();
  const pattern = field<string | undefined>(body, 'pattern', 'string', undefined);
  const definition = field<Record<string, string | number> | undefined>(
    body,
    'definition',
    'object',
    undefined,
  );
  if (pattern === undefined) throw badRequest('[{key_missing,pattern}]');
  if (definition === undefined) throw badRequest('[{key_missing,definition}]');
  const existed = broker.policies().some((p) => p.name === name);
  await attempt(async () => {
    await broker.setPolicy(name, {
      pattern,
      definition,
      priority: field(body, 'priority', 'number', 0),
      applyTo: field<PolicyTarget>(body, 'apply-to', 'string', 'all'),
    });
  });
  return { status: existed ? 204 : 201 };
}

async function clearPolicy(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  await attempt(async () => {
    await broker.clearPolicy(param(request, 'name'));
  });
  return { status: 204 };
}

export const accessRoutes: readonly Route[] = [
  {
    path: '/api/policies',
    methods: {
      GET: { level: 'management', handle: (r, c) => ({ status: 200, json: policiesOf(r, c) }) },
    },
  },
  {
    path: '/api/policies/:vhost',
    methods: {
      GET: { level: 'management', handle: (r, c) => ({ status: 200, json: policiesOf(r, c) }) },
    },
  },
  {
    path: '/api/policies/:vhost/:name',
    methods: {
      GET: {
        level: 'management',
        handle: (r, c) => {
          const found = vhostBroker(c, r, false)
            .policies()
            .find((p) => p.name === param(r, 'name'));
          if (!found) throw notFound();
          return { status: 200, json: found };
        },
      },
      PUT: { level: 'policymaker', handle: setPolicy },
      DELETE: { level: 'policymaker', handle: clearPolicy },
    },
  },
];
