/**
 * Who may use the management API: HTTP basic auth against the server's users, with RabbitMQ's
 * tag rules. `administrator` may do everything; `monitoring` sees every vhost and connection;
 * `policymaker` also sets policies; `management` sees what its vhosts hold; a user without one
 * of these tags is refused, and so is a loopback-only user (`guest`) from elsewhere.
 */
import type { IncomingMessage } from 'node:http';
import { isLoopback, type Users } from '../server/auth.js';
import { notAuthorised } from './http-error.js';

/** What a route asks of its user, lowest first. */
export type Level = 'management' | 'policymaker' | 'monitoring' | 'administrator';

/** An authenticated user of the API. */
export interface ApiUser {
  readonly name: string;
  readonly tags: readonly string[];
}

const MANAGEMENT_TAGS = new Set(['management', 'policymaker', 'monitoring', 'administrator']);

/**
 * The user of a request.
 * @throws HttpError 401 for missing or wrong credentials, a user without a management tag, or a
 *   loopback-only user from another address.
 */
export function authenticate(
  request: IncomingMessage,
  users: Users,
  loopbackUsers: ReadonlySet<string>,
): ApiUser {
  const header = request.headers.authorization;
  const match = header === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) throw notAuthorised('Not_Authorized');
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw notAuthorised('Not_Authorized');
  const name = decoded.slice(0, colon);
  if (!users.authenticate(name, decoded.slice(colon + 1))) {
    throw notAuthorised('Login failed');
  }
  if (loopbackUsers.has(name) && !isLoopback(request.socket.remoteAddress)) {
    throw notAuthorised('User can only log in via localhost');
  }
  const tags = users.tags(name);
  if (!tags.some((tag) => MANAGEMENT_TAGS.has(tag))) throw notAuthorised('Not management user');
  return { name, tags };
}

/** Whether `user` reaches `level`. */
export function reaches(user: ApiUser, level: Level): boolean {
  const has = (tag: string) => user.tags.includes(tag);
  switch (level) {
    case 'management':
      return true;
    case 'policymaker':
      return has('policymaker') || has('administrator');
    case 'monitoring':
      return has('monitoring') || has('administrator');
    case 'administrator':
      return has('administrator');
  }
}

/** @throws HttpError 401 when `user` does not reach `level`, worded as RabbitMQ words it. */
export function requireLevel(user: ApiUser, level: Level): void {
  if (reaches(user, level)) return;
  const names: Record<Level, string> = {
    management: 'management',
    policymaker: 'policymaker',
    monitoring: 'monitor',
    administrator: 'administrator',
  };
  throw notAuthorised(`Not ${names[level]} user`);
}

/**
 * @throws HttpError 401 when `user` may not use `vhost`: monitoring users see every vhost,
 *   others those they hold permissions in.
 */
export function requireVhost(user: ApiUser, users: Users, vhost: string, write: boolean): void {
  if (!write && reaches(user, 'monitoring')) return;
  if (users.access(user.name, vhost) === 'granted') return;
  throw notAuthorised('User not authorised to access virtual host');
}
