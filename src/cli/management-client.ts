/**
 * The commands that talk to a running server do so through its management API: a base URL with
 * the credentials in it (`http://guest:guest@127.0.0.1:15672`, the default), plain `fetch`.
 */
import { UsageError } from './command.js';

/** The default `--url`: RabbitMQ's management port on this machine, as guest. */
export const DEFAULT_MANAGEMENT_URL = 'http://guest:guest@127.0.0.1:15672';

/** A failed request: the URL did not answer, or answered with an error. */
export class ManagementRequestError extends Error {
  override name = 'ManagementRequestError';
}

export interface ManagementClient {
  /** Sends a request under `/api` and resolves with its JSON. */
  request(method: string, path: string, body?: unknown): Promise<unknown>;
}

/**
 * A client of the API at `url`.
 * @throws UsageError for a URL that is not http(s).
 */
export function managementClient(url: string): ManagementClient {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url must be an http:// URL, got '${url}'`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`--url must be an http:// URL, got '${url}'`);
  }
  const user = decodeURIComponent(parsed.username || 'guest');
  const password = decodeURIComponent(parsed.password || 'guest');
  const authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const base = `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/$/, '')}/api`;
  return {
    async request(method, path, body) {
      let response: Response;
      try {
        response = await fetch(`${base}${path}`, {
          method,
          headers: {
            authorization,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
      } catch (error) {
        throw new ManagementRequestError(
          `${parsed.host} does not answer (${(error as Error).cause ?? (error as Error).message}); is the server started with --management-port?`,
        );
      }
      const text = await response.text();
      if (!response.ok) {
        let reason = text;
        try {
          reason = (JSON.parse(text) as { reason?: string }).reason ?? text;
        } catch {}
        throw new ManagementRequestError(
          `${method} ${path}: HTTP ${response.status}${reason ? ` (${reason})` : ''}`,
        );
      }
      return text === '' ? undefined : JSON.parse(text);
    },
  };
}

/** Rows as an aligned table with a header, as `rabbitmqctl list_*` prints them. */
export function table(columns: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = [columns, ...rows.map((row) => row.map((cell) => String(cell ?? '')))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  return `${cells
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}
