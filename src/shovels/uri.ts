/**
 * What a shovel's `amqp://`/`amqps://` URI tells its client, read as RabbitMQ's `amqp_uri` reads
 * it: credentials, host, port and vhost, and these query parameters:
 * - `heartbeat`, `channel_max`, `frame_max`: the connection's tuning;
 * - `cacertfile`, `certfile`, `keyfile` (paths of PEM files), `verify` (`verify_peer`, the default
 *   here, or `verify_none`) and `server_name_indication` (a host name, or `disable`): TLS.
 *
 * `connection_timeout`, `auth_mechanism` (PLAIN is used), `depth` and `fail_if_no_peer_cert` are
 * accepted and ignored.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';

/** RabbitMQ's tuning parameters, and the names the client reads them by. */
const TUNING: Readonly<Record<string, string>> = {
  heartbeat: 'heartbeat',
  channel_max: 'channelMax',
  frame_max: 'frameMax',
};

const TLS_PARAMETERS = ['cacertfile', 'certfile', 'keyfile', 'verify', 'server_name_indication'];

/** The URL the client connects to (named `Shovel <name>`), and its TLS options. */
export function clientOptions(
  uri: string,
  name: string,
): { readonly url: string; readonly tls: ConnectionOptions } {
  const url = new URL(uri);
  const query = url.searchParams;
  if (!query.has('name')) query.set('name', `Shovel ${name}`);
  for (const [theirs, ours] of Object.entries(TUNING)) {
    const value = query.get(theirs);
    if (value !== null && !query.has(ours)) query.set(ours, value);
  }
  const tls: ConnectionOptions = {};
  const file = (key: string) => {
    const path = query.get(key);
    return path === null ? undefined : readFileSync(path);
  };
  const ca = file('cacertfile');
  if (ca) tls.ca = ca;
  const cert = file('certfile');
  if (cert) tls.cert = cert;
  const key = file('keyfile');
  if (key) tls.key = key;
  const verify = query.get('verify');
  if (verify === 'verify_none') tls.rejectUnauthorized = false;
  else if (verify === 'verify_peer') tls.rejectUnauthorized = true;
  const sni = query.get('server_name_indication');
  if (sni === 'disable') tls.servername = '';
  else if (sni !== null) tls.servername = sni;
  for (const key of TLS_PARAMETERS) query.delete(key);
  return { url: url.toString(), tls };
}
