/**
 * The one hook for what the management listener serves outside `/api` and `/metrics` (the
 * dashboard's page at `/` and its files): a handler that answers a request and says whether it
 * did. Without one, such paths are 404.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serveDashboard } from './dashboard/dashboard-files.js';

/** Answers a request for a file, or resolves false to leave it to the 404. */
export type StaticFiles = (
  request: IncomingMessage,
  response: ServerResponse,
) => boolean | Promise<boolean>;

/** The static files served when `listen()`'s `management` option names none: the dashboard. */
export const defaultStaticFiles: StaticFiles | undefined = serveDashboard;
