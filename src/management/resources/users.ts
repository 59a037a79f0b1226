/**
 * Users and permissions: the server's (its `users` option or `serve --users` file), listed and
 * changed while it runs as RabbitMQ 3.10's API changes them. A user PUT with `password` gets it
 * hashed with `rabbit_password_hashing_sha256`, or keeps the `password_hash` given with its
 * `hashing_algorithm`; a deleted user's connections are closed; changed permissions apply to the
 * next operation of each connection.
 */
import { randomBytes } from 'node:crypto';
import type { PermissionGrant, UserCredentials, UserRecord } from '../../server/auth.js';
import type { ManagementContext } from '../context.js';
import { badRequest, notFound } from '../http-error.js';
import type { ApiAnswer, ApiRequest, Route } from '../router.js';
import { param, vhostBroker } from './visible.js';

/** The algorithms RabbitMQ's internal backend verifies. */
const ALGORITHMS = [
  'rabbit_password_hashing_sha256',
  'rabbit_password_hashing_sha512',
  'rabbit_password_hashing_md5',
];

/** A user as the plugin shows it. */
export function userJson(user: UserRecord) {
  return {
    name: user.name,
    password_hash: user.passwordHash,
    hashing_algorithm: user.hashingAlgorithm,
    tags: user.tags,
    limits: {},
  };
}

function permissionJson(g: PermissionGrant) {
  return { user: g.user, vhost: g.vhost, configure: g.configure, write: g.write, read: g.read };
}

function grants(context: ManagementContext, keep: (g: PermissionGrant) => boolean) {
  return context.state.users.grants.filter(keep).map(permissionJson);
}

function userNamed(request: ApiRequest, context: ManagementContext): UserRecord {
  const name = param(request, 'user');
  const found = context.state.users.users.find((u) => u.name === name);
  if (!found) throw notFound();
  return found;
}

/** `tags` as RabbitMQ 3.10 takes them: comma-separated, or a list. */
function tagsOf(body: Record<string, unknown>): string[] {
  if (!Object.hasOwn(body, 'tags')) throw badRequest('tags_not_present');
  const tags = body.tags;
  if (typeof tags === 'string') {
    return tags
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
  }
  if (Array.isArray(tags) && tags.every((t) => typeof t === 'string')) return tags;
  throw badRequest('tags must be a string or a list of strings');
}

function text(body: Record<string, unknown>, name: string): string | undefined {
  const value = Object.hasOwn(body, name) ? body[name] : undefined;
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw badRequest(`${name} must be a string`);
  return value;
}

/**
 * The credentials of a PUT: RabbitMQ ignores `hashing_algorithm` beside a `password`; a user
 * given neither gets a random password (a new one) or none (an existing one), as in RabbitMQ.
 */
function credentialsOf(body: Record<string, unknown>, exists: boolean): UserCredentials {
  const password = text(body, 'password');
  const passwordHash = text(body, 'password_hash');
  const hashingAlgorithm = text(body, 'hashing_algorithm');
  if (password !== undefined && passwordHash !== undefined) {
    throw badRequest('both_password_and_password_hash_are_provided');
  }
  if (password !== undefined) return { password };
  if (passwordHash === undefined) {
    return exists ? { passwordHash: '' } : { password: randomBytes(24).toString('base64') };
  }
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(passwordHash)) {
    throw badRequest(['not_base64', passwordHash]);
  }
  if (hashingAlgorithm !== undefined && !ALGORITHMS.includes(hashingAlgorithm)) {
    throw badRequest(['unsupported_hashing_algorithm', hashingAlgorithm]);
  }
  return hashingAlgorithm === undefined ? { passwordHash } : { passwordHash, hashingAlgorithm };
}

async function putUser(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const name = param(request, 'user');
  const body = await request.body();
  const { users } = context.state;
  const tags = tagsOf(body);
  const added = users.putUser(name, credentialsOf(body, users.names.includes(name)), tags);
  return { status: added ? 201 : 204 };
}

function deleteUser(request: ApiRequest, context: ManagementContext): ApiAnswer {
  if (!context.state.users.deleteUser(param(request, 'user'))) throw notFound();
  return { status: 204 };
}

/** Deletes the users named, in order, stopping at the first that does not exist, as RabbitMQ. */
async function bulkDelete(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const body = await request.body();
  if (!Object.hasOwn(body, 'users')) throw badRequest('[{key_missing,users}]');
  const names = body.users;
  if (!Array.isArray(names) || !names.every((n) => typeof n === 'string')) {
    throw badRequest('users must be a list of user names');
  }
  for (const name of names) {
    if (!context.state.users.deleteUser(name)) throw badRequest(['no_such_user', name]);
  }
  return { status: 204 };
}

function pattern(body: Record<string, unknown>, name: string): string {
  const value = text(body, name);
  if (value === undefined) throw badRequest(`[{key_missing,${name}}]`);
  try {
    new RegExp(value);
  } catch (error) {
    throw badRequest(['invalid_regexp', value, (error as Error).message]);
  }
  return value;
}

async function setPermissions(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const vhost = param(request, 'vhost');
  const user = param(request, 'user');
  const body = await request.body();
  const { users } = context.state;
  if (!users.names.includes(user) || !users.vhosts.includes(vhost)) {
    throw badRequest('vhost_or_user_not_found');
  }
  const patterns = {
    configure: pattern(body, 'configure'),
    write: pattern(body, 'write'),
    read: pattern(body, 'read'),
  };
  return { status: users.setPermissions(user, vhost, patterns) ? 201 : 204 };
}

function clearPermissions(request: ApiRequest, context: ManagementContext): ApiAnswer {
  const cleared = context.state.users.clearPermissions(
    param(request, 'user'),
    param(request, 'vhost'),
  );
  if (!cleared) throw notFound();
  return { status: 204 };
}

/**
 * The `users` and `permissions` of a definitions document POSTed to `/api/definitions`, added
 * to the server's as PUTs of each would add them; checked whole before any is applied.
 */
export function importAccess(body: Record<string, unknown>, context: ManagementContext): void {
  const { users } = context.state;
  const entries = (key: string) => {
    const value = Object.hasOwn(body, key) ? body[key] : undefined;
    if (value === undefined) return [];
    if (!Array.isArray(value) || !value.every((e) => typeof e === 'object' && e !== null)) {
      throw badRequest(`${key} must be a list of JSON objects`);
    }
    return value as Record<string, unknown>[];
  };
  const added = entries('users').map((entry) => {
    const name = text(entry, 'name');
    if (name === undefined) throw badRequest('[{key_missing,name}]');
    return {
      name,
      credentials: credentialsOf(entry, users.names.includes(name)),
      tags: tagsOf(entry),
    };
  });
  const known = new Set([...users.names, ...added.map((u) => u.name)]);
  const granted = entries('permissions').map((entry) => {
    const user = text(entry, 'user') ?? '';
    const vhost = text(entry, 'vhost') ?? '';
    if (!known.has(user) || !users.vhosts.includes(vhost)) {
      throw badRequest('vhost_or_user_not_found');
    }
    const patterns = {
      configure: pattern(entry, 'configure'),
      write: pattern(entry, 'write'),
      read: pattern(entry, 'read'),
    };
    return { user, vhost, patterns };
  });
  for (const { name, credentials, tags } of added) users.putUser(name, credentials, tags);
  for (const { user, vhost, patterns } of granted) users.setPermissions(user, vhost, patterns);
}

type Handle = (request: ApiRequest, context: ManagementContext) => ApiAnswer | Promise<ApiAnswer>;
const admin = (handle: Handle) => ({ level: 'administrator' as const, handle });

export const userRoutes: readonly Route[] = [
  {
    path: '/api/users',
    methods: {
      GET: admin((_, c) => ({ status: 200, json: c.state.users.users.map(userJson) })),
    },
  },
  // Before `/api/users/:user`, which would take it for a user's name.
  { path: '/api/users/bulk-delete', methods: { POST: admin(bulkDelete) } },
  {
    path: '/api/users/:user',
    methods: {
      GET: admin((r, c) => ({ status: 200, json: userJson(userNamed(r, c)) })),
      PUT: admin(putUser),
      DELETE: admin(deleteUser),
    },
  },
  {
    path: '/api/users/:user/permissions',
    methods: {
      GET: admin((r, c) => {
        const { name } = userNamed(r, c);
        return { status: 200, json: grants(c, (g) => g.user === name) };
      }),
    },
  },
  {
    path: '/api/permissions',
    methods: { GET: admin((_, c) => ({ status: 200, json: grants(c, () => true) })) },
  },
  {
    path: '/api/vhosts/:vhost/permissions',
    methods: {
      GET: admin((r, c) => {
        vhostBroker(c, r, false);
        const vhost = param(r, 'vhost');
        return { status: 200, json: grants(c, (g) => g.vhost === vhost) };
      }),
    },
  },
  {
    path: '/api/permissions/:vhost/:user',
    methods: {
      GET: admin((r, c) => {
        const vhost = param(r, 'vhost');
        const user = param(r, 'user');
        const found = grants(c, (g) => g.vhost === vhost && g.user === user);
        if (found.length === 0) throw notFound();
        return { status: 200, json: found[0] };
      }),
      PUT: admin(setPermissions),
      DELETE: admin(clearPermissions),
    },
  },
];
