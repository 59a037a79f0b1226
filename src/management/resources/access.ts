/**
 * Users, permissions and policies. Users and permissions are the server's (its `users` option
 * or `serve --users` file), fixed while it runs: they are listed, and changing them is 405.
 * Policies are each vhost's broker's: listed, set (PUT) and cleared (DELETE).
 */
import type { Policy, PolicyTarget } from '../../broker/policies.js';
import type { ManagementContext } from '../context.js';
import { attempt, badRequest, notFound } from '../http-error.js';
import { field } from '../request-body.js';
import type { ApiAnswer, ApiRequest, Route } from '../router.js';
import { listedVhosts, param, vhostBroker } from './visible.js';

function userJson(context: ManagementContext, name: string) {
  return {
    name,
    password_hash: '',
    hashing_algorithm: 'rabbit_password_hashing_sha256',
    tags: context.state.users.tags(name),
    limits: {},
  };
}

function permissionJson(g: {
  user: string;
  vhost: string;
  configure: string;
  write: string;
  read: string;
}) {
  return { user: g.user, vhost: g.vhost, configure: g.configure, write: g.write, read: g.read };
}

function grants(context: ManagementContext, keep: (g: { user: string; vhost: string }) => boolean) {
  return context.state.users.grants.filter(keep).map(permissionJson);
}

function userNamed(request: ApiRequest, context: ManagementContext): string {
  const name = param(request, 'user');
  if (!context.state.users.names.includes(name)) throw notFound();
  return name;
}

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

const admin = (handle: (request: ApiRequest, context: ManagementContext) => ApiAnswer) => ({
  GET: { level: 'administrator' as const, handle },
});

export const accessRoutes: readonly Route[] = [
  {
    path: '/api/users',
    methods: admin((_, c) => ({
      status: 200,
      json: c.state.users.names.map((n) => userJson(c, n)),
    })),
  },
  {
    path: '/api/users/:user',
    methods: admin((r, c) => ({ status: 200, json: userJson(c, userNamed(r, c)) })),
  },
  {
    path: '/api/users/:user/permissions',
    methods: admin((r, c) => {
      const user = userNamed(r, c);
      return { status: 200, json: grants(c, (g) => g.user === user) };
    }),
  },
  {
    path: '/api/permissions',
    methods: admin((_, c) => ({ status: 200, json: grants(c, () => true) })),
  },
  {
    path: '/api/vhosts/:vhost/permissions',
    methods: admin((r, c) => {
      vhostBroker(c, r, false);
      const vhost = param(r, 'vhost');
      return { status: 200, json: grants(c, (g) => g.vhost === vhost) };
    }),
  },
  {
    path: '/api/permissions/:vhost/:user',
    methods: admin((r, c) => {
      const vhost = param(r, 'vhost');
      const user = param(r, 'user');
      const found = grants(c, (g) => g.vhost === vhost && g.user === user);
      if (found.length === 0) throw notFound();
      return { status: 200, json: found[0] };
    }),
  },
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
