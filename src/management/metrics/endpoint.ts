/**
 * `GET /metrics` (aggregated) and `GET /metrics/per-object` (per queue), as rabbitmq_prometheus
 * serves them: no authentication, the text exposition format.
 */
import type { ManagementContext } from '../context.js';
import { HttpError, notFound } from '../http-error.js';
import type { ApiAnswer } from '../router.js';
import { exposition } from './exposition.js';
import { families } from './families.js';

export function metricsAnswer(context: ManagementContext, method: string, path: string): ApiAnswer {
  const perObject = path === '/metrics/per-object';
  if (path !== '/metrics' && !perObject) throw notFound();
  if (method !== 'GET' && method !== 'HEAD') {
    throw new HttpError(405, 'Method Not Allowed', 'Method Not Allowed', { allow: 'HEAD, GET' });
  }
  return { status: 200, text: exposition(families(context, perObject)) };
}
