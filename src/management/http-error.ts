/**
 * The error answers of the management API, as RabbitMQ's plugin words them: a JSON body
 * `{"error": ..., "reason": ...}` with the status code, and broker errors mapped onto them.
 */
import { MqliteError } from '../errors.js';

/** A `reason`: text, or a list as RabbitMQ answers an Erlang tuple (`["no_such_user", "bob"]`). */
export type Reason = string | readonly unknown[];

/** An answer other than success, thrown by a handler and written by the listener. */
export class HttpError extends Error {
  readonly status: number;
  readonly error: string;
  readonly reason: Reason;
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    error: string,
    reason: Reason,
    headers: Readonly<Record<string, string>> = {},
  ) {
    super(`${status} ${error}: ${typeof reason === 'string' ? reason : JSON.stringify(reason)}`);
    this.status = status;
    this.error = error;
    this.reason = reason;
    this.headers = headers;
  }
}

/** 404, as RabbitMQ answers for a missing object or an unknown path. */
export function notFound(): HttpError {
  return new HttpError(404, 'Object Not Found', 'Not Found');
}

/** 400 with RabbitMQ's `bad_request`. */
export function badRequest(reason: Reason): HttpError {
  return new HttpError(400, 'bad_request', reason);
}

/** 401: no credentials, wrong ones, or a user whose tags do not reach the resource. */
export function notAuthorised(reason: string): HttpError {
  return new HttpError(401, 'not_authorised', reason, {
    'www-authenticate': 'Basic realm="RabbitMQ Management"',
  });
}

/**
 * A broker's error as the plugin answers it: 404 for what does not exist, 400 `bad_request` with
 * the broker's words for what it refuses (a precondition, a bad argument, a reserved name).
 */
export function fromBrokerError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof MqliteError) {
    if (error.replyCode === 404) return notFound();
    return badRequest(error.message);
  }
  if (error instanceof TypeError || error instanceof RangeError) return badRequest(error.message);
  throw error;
}

/** Runs a broker call, its errors answered as the plugin answers them (see `fromBrokerError`). */
export async function attempt<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw fromBrokerError(error);
  }
}
