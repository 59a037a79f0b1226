/** What a user sees: the vhosts a listing covers, and the vhost a path names. */
import type { Broker } from '../../broker/broker.js';
import { type ApiUser, reaches, requireVhost } from '../auth.js';
import type { ManagementContext } from '../context.js';
import { notFound } from '../http-error.js';
import type { ApiAnswer, ApiRequest } from '../router.js';

/** The vhosts `user` may list: every one for monitoring users, else those it holds permissions in. */
export function visibleVhosts(context: ManagementContext, user: ApiUser): string[] {
  const all = [...context.state.brokers.keys()];
  if (reaches(user, 'monitoring')) return all;
  return all.filter((vhost) => context.state.users.access(user.name, vhost) === 'granted');
}

/** The vhosts of a listing: the one of `:vhost` when the path names one, else every visible one. */
export function listedVhosts(context: ManagementContext, request: ApiRequest): string[] {
  const vhost = request.params.get('vhost');
  if (vhost === undefined) return visibleVhosts(context, request.user);
  vhostBroker(context, request, false);
  return [vhost];
}

/**
 * The broker of the path's `:vhost`, once the user may use it.
 * @throws HttpError 404 for a vhost no broker serves, 401 for one the user may not use.
 */
export function vhostBroker(
  context: ManagementContext,
  request: ApiRequest,
  write: boolean,
): Broker {
  const vhost = request.params.get('vhost') ?? '/';
  const broker = context.broker(vhost);
  requireVhost(request.user, context.state.users, vhost, write);
  return broker;
}

/** The path's parameter `name` (the router matched it, so it is there). */
export function param(request: ApiRequest, name: string): string {
  return request.params.get(name) ?? '';
}

/** A listing over the request's vhosts: each one's items, as JSON. */
export function listing(
  context: ManagementContext,
  request: ApiRequest,
  items: (broker: Broker, vhost: string) => unknown[],
): ApiAnswer {
  const json = listedVhosts(context, request).flatMap((v) => items(context.broker(v), v));
  return { status: 200, json };
}

/**
 * One object of the path's vhost, as JSON.
 * @throws HttpError 404 when `find` finds none.
 */
export function single<T>(
  context: ManagementContext,
  request: ApiRequest,
  find: (broker: Broker) => T | undefined,
  json: (broker: Broker, found: T) => unknown,
): ApiAnswer {
  const broker = vhostBroker(context, request, false);
  const found = find(broker);
  if (found === undefined) throw notFound();
  return { status: 200, json: json(broker, found) };
}
