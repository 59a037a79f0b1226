// The broker's management API, as its HTTP basic auth wants it: the credentials live in this
// tab's sessionStorage and go with every request; paths are relative, so the page works under a
// path prefix too.

const AUTH = 'mqlite.dashboard.authorization';
const USER = 'mqlite.dashboard.user';

/** The API answered 401: the credentials are wrong or gone. */
export class Unauthorized extends Error {}

/** The API answered another error status; `reason` is the API's own words. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} reason
   */
  constructor(status, reason) {
    super(`${status}: ${reason}`);
    this.status = status;
    this.reason = reason;
  }
}

/** @returns {string | null} the signed-in user's name */
export function signedInUser() {
  return sessionStorage.getItem(AUTH) === null ? null : sessionStorage.getItem(USER);
}

/**
 * @param {string} user
 * @param {string} password
 */
export function signIn(user, password) {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  sessionStorage.setItem(AUTH, `Basic ${btoa(String.fromCharCode(...bytes))}`);
  sessionStorage.setItem(USER, user);
}

export function signOut() {
  sessionStorage.removeItem(AUTH);
  sessionStorage.removeItem(USER);
}

/**
 * One request to the API: the parsed JSON answer, or undefined for an empty one.
 * @param {string} path under /api, starting with a slash
 * @param {{ method?: string, body?: unknown, headers?: Record<string, string> }} [options]
 */
export async function api(path, { method = 'GET', body, headers = {} } = {}) {
  const authorization = sessionStorage.getItem(AUTH);
  if (authorization === null) throw new Unauthorized();
  const response = await fetch(`api${path}`, {
    method,
    cache: 'no-store',
    // The browser keeps no credentials of its own: a 401 comes back here, not as its login prompt.
    credentials: 'omit',
    headers: {
      Authorization: authorization,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status === 401) throw new Unauthorized();
  if (!response.ok) throw new ApiError(response.status, reasonOf(text) ?? response.statusText);
  return text === '' ? undefined : JSON.parse(text);
}

/** @param {string} text */
function reasonOf(text) {
  try {
    const reason = JSON.parse(text).reason;
    return typeof reason === 'string' ? reason : undefined;
  } catch {
    return text.trim() || undefined;
  }
}

/**
 * A path segment: a vhost or an object's name, `/` included (`%2F`).
 * @param {string} segment
 */
export const part = (segment) => encodeURIComponent(segment);
