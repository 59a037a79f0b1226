/**
 * A small router: routes by path pattern (`/api/queues/:vhost/:name`), each with its methods.
 * A path segment is decoded on its own, so `%2F` stays inside a name (the vhost `/`) and no
 * `..` ever climbs out of one. A path no route matches is 404; a method its route lacks is 405
 * with `Allow`, as RabbitMQ answers.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ApiUser, Level } from './auth.js';
import type { ManagementContext } from './context.js';
import { HttpError, notFound } from './http-error.js';

/** A request, once routed and authenticated. */
export interface ApiRequest {
  /** The decoded values of the pattern's `:` segments, by name. */
  readonly params: ReadonlyMap<string, string>;
  readonly query: URLSearchParams;
  readonly user: ApiUser;
  readonly headers: IncomingHttpHeaders;
  /** The body as a JSON object (`{}` when empty); read on demand, size-limited. */
  body(): Promise<Record<string, unknown>>;
}

/** What a handler answers: a JSON body, or text (Prometheus). */
export interface ApiAnswer {
  readonly status: number;
  readonly json?: unknown;
  readonly text?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

export interface Action {
  /** What the user's tags must reach (see auth.ts). */
  readonly level: Level;
  readonly handle: (
    request: ApiRequest,
    context: ManagementContext,
  ) => Promise<ApiAnswer> | ApiAnswer;
}

/** A path pattern and what each method does there. */
export interface Route {
  readonly path: string;
  readonly methods: Partial<Record<Method, Action>>;
}

/** A matched route: the action, and the values of the pattern's segments. */
export interface Routed {
  readonly action: Action;
  readonly params: ReadonlyMap<string, string>;
}

export class Router {
  readonly #routes: { readonly segments: readonly string[]; readonly route: Route }[];

  constructor(routes: readonly Route[]) {
    this.#routes = routes.map((route) => ({ segments: route.path.split('/').slice(1), route }));
  }

  /**
   * The action for `method` on `pathname` (HEAD is GET).
   * @throws HttpError 404 for no route, 405 for a method the route lacks.
   */
  find(method: string, pathname: string): Routed {
    const segments = decodeSegments(pathname);
    for (const { segments: pattern, route } of this.#routes) {
      const params = match(pattern, segments);
      if (!params) continue;
      const action = route.methods[(method === 'HEAD' ? 'GET' : method) as Method];
      if (!action) throw methodNotAllowed(route);
      return { action, params };
    }
    throw notFound();
  }
}

function methodNotAllowed(route: Route): HttpError {
  const allowed = Object.keys(route.methods);
  if (allowed.includes('GET')) allowed.unshift('HEAD');
  return new HttpError(405, 'Method Not Allowed', 'Method Not Allowed', {
    allow: [...allowed, 'OPTIONS'].join(', '),
  });
}

function decodeSegments(pathname: string): string[] {
  const raw = pathname.split('/').slice(1);
  // A trailing slash names the same resource.
  if (raw.length > 1 && raw[raw.length - 1] === '') raw.pop();
  try {
    return raw.map((segment) => decodeURIComponent(segment));
  } catch {
    throw notFound();
  }
}

function match(
  pattern: readonly string[],
  segments: readonly string[],
): Map<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params = new Map<string, string>();
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i]!;
    if (want.startsWith(':')) params.set(want.slice(1), segments[i]!);
    else if (want !== segments[i]) return undefined;
  }
  return params;
}
