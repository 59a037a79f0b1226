/**
 * An AMQP handshake with any user and vhost over the raw client, so a test reads the exact
 * connection.close a server answers with (amqplib hides it when the close comes at open).
 */
import { HEADER, RawClient } from '../server/raw-client.js';

export interface Login {
  readonly user: string;
  readonly password: string;
  readonly vhost?: string;
  /** frame-max to answer connection.tune with (default: the server's). */
  readonly frameMax?: number;
}

/** The connection.close of a refused handshake. */
export interface Refusal {
  readonly replyCode: number;
  readonly replyText: string;
}

/** Logs in and opens the vhost: the open client, or the server's refusal. */
export async function rawLogin(port: number, login: Login): Promise<RawClient | Refusal> {
  const client = await RawClient.connect(port);
  client.send(HEADER);
  await client.method('connection.start');
  client.sendMethod(0, 'connection.start-ok', {
    clientProperties: { capabilities: { authentication_failure_close: true } },
    mechanism: 'PLAIN',
    response: `\0${login.user}\0${login.password}`,
    locale: 'en_US',
  });
  const next = await client.frame(
    (f) => f.method?.name === 'connection.tune' || f.method?.name === 'connection.close',
    'connection.tune or connection.close',
  );
  if (next.method?.name === 'connection.close') return refusal(client, next.method.args);
  const tune = next.method!.args as { channelMax: number; frameMax: number };
  client.sendMethod(0, 'connection.tune-ok', {
    channelMax: tune.channelMax,
    frameMax: login.frameMax ?? tune.frameMax,
    heartbeat: 0,
  });
  client.sendMethod(0, 'connection.open', {
    virtualHost: login.vhost ?? '/',
    capabilities: '',
    insist: false,
  });
  const opened = await client.frame(
    (f) => f.method?.name === 'connection.open-ok' || f.method?.name === 'connection.close',
    'connection.open-ok or connection.close',
  );
  if (opened.method?.name === 'connection.close') return refusal(client, opened.method.args);
  return client;
}

/** Waits for the connection.close a server sends and answers it. */
export async function closedWith(client: RawClient): Promise<Refusal> {
  return refusal(client, (await client.method('connection.close')).args);
}

function refusal(client: RawClient, args: unknown): Refusal {
  const { replyCode, replyText } = args as Refusal;
  client.sendMethod(0, 'connection.close-ok', {});
  client.destroy();
  return { replyCode, replyText };
}
