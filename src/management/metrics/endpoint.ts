/**
 * `GET /metrics` (aggregated), `GET /metrics/per-object` (per queue) and `GET /metrics/detailed`
 * (the families asked for), as rabbitmq_prometheus serves them: no authentication, the text
 * exposition format.
 */
import type { ManagementContext } from '../context.js';
import { HttpError, notFound } from '../http-error.js';
import type { ApiAnswer } from '../router.js';
import { detailedFamilies } from './detailed.js';
import { exposition } from './exposition.js';
import { families } from './families.js';

export function metricsAnswer(
  context: ManagementContext,
  method: string,
  path: string,
  query: URLSearchParams,
): ApiAnswer {
  const perObject = path === '/metrics/per-object';
  const detailed = path === '/metrics/detailed';
  if (path !== '/metrics' && !perObject && !detailed) throw notFound();
  if (method !== 'GET' && method !== 'HEAD') {
    throw new HttpError(405, 'Method Not Allowed', 'Method Not Allowed', { allow: 'HEAD, GET' });
  }
  const served = detailed ? detailedFamilies(context, query) : families(context, perObject);
  return { status: 200, text: exposition(served) };
}
