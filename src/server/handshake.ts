/**
 * The handshake of a connection as RabbitMQ 3.10 conducts it: the protocol header, then
 * connection.start (what the server offers), start-ok (the client logs in), tune and tune-ok
 * (frame-max, channel-max and heartbeat settled), and open (connection.ts opens the vhost).
 */
import { AmqpException } from './errors.js';
import { FRAME_MIN, type Limits } from './limits.js';
import { Reader } from './wire/bytes.js';
import { readTable } from './wire/field-table.js';
import type { OutArgs } from './wire/methods.js';
import type { ArgsOf } from './wire/spec.js';

/** The protocol header of AMQP 0-9-1. */
export const PROTOCOL_HEADER = Buffer.from([0x41, 0x4d, 0x51, 0x50, 0, 0, 9, 1]);
/** The frame-max of the handshake, before connection.tune-ok set the connection's own. */
export const HANDSHAKE_FRAME_MAX = 131072;

/** connection.start: the server, its capabilities and its login mechanisms. */
export const CONNECTION_START: OutArgs<'connection.start'> = {
  versionMajor: 0,
  versionMinor: 9,
  serverProperties: {
    product: 'mqlite',
    version: '0.1.0',
    platform: `Node.js ${process.version}`,
    copyright: 'mqlite contributors',
    information: 'Licensed under the MIT license',
    capabilities: {
      publisher_confirms: true,
      exchange_exchange_bindings: true,
      'basic.nack': true,
      consumer_cancel_notify: true,
      'connection.blocked': true,
      consumer_priorities: true,
      authentication_failure_close: true,
      per_consumer_qos: true,
      direct_reply_to: true,
    },
  },
  mechanisms: 'PLAIN AMQPLAIN',
  locales: 'en_US',
};

/** What connection.start-ok settles: who logged in, and whether it takes server cancels. */
export interface Login {
  readonly user: string;
  /** The client announced `consumer_cancel_notify`. */
  readonly cancelNotify: boolean;
  /** The client announced `connection.blocked`: it is told when the alarm blocks it. */
  readonly blockedNotify: boolean;
}

/**
 * The login of a connection.start-ok.
 * @throws AmqpException 403 for credentials `authenticate` refuses (or cannot be read).
 */
export function login(
  a: ArgsOf<'connection.start-ok'>,
  authenticate: (user: string, password: string) => boolean,
): Login {
  const cancelNotify = hasCapability(a, 'consumer_cancel_notify');
  const credentials = parseCredentials(a.mechanism, a.response);
  if (!credentials || !authenticate(credentials.user, credentials.password)) {
    throw new AmqpException(
      403,
      `Login was refused using authentication mechanism ${a.mechanism}. For details see the broker logfile.`,
      credentials
        ? `${a.mechanism} login refused: user '${credentials.user}' - invalid credentials`
        : `${a.mechanism} login refused: its response could not be read`,
    );
  }
  return {
    user: credentials.user,
    cancelNotify,
    blockedNotify: hasCapability(a, 'connection.blocked'),
  };
}

/** Whether the client's connection.start-ok announces the capability `name`. */
export function hasCapability(a: ArgsOf<'connection.start-ok'>, name: string): boolean {
  const capabilities = a.clientProperties.capabilities;
  return (
    typeof capabilities === 'object' &&
    capabilities !== null &&
    Object.hasOwn(capabilities, name) &&
    (capabilities as Record<string, unknown>)[name] === true
  );
}

/** What connection.tune-ok settles. */
export interface Tuning {
  readonly frameMax: number;
  readonly channelMax: number;
  /** 0: no heartbeats. */
  readonly heartbeatMs: number;
}

/**
 * The tuning a connection.tune-ok asks for, within the server's limits. Zero, which AMQP reads
 * as "no limit", is out of bounds, as on RabbitMQ: the server proposed its limits in tune.
 * @throws AmqpException 530 for a frame-max or channel-max out of bounds.
 */
export function tuning(a: ArgsOf<'connection.tune-ok'>, limits: Limits): Tuning {
  const { frameMax, channelMax } = a;
  if (frameMax < FRAME_MIN) {
    throw new AmqpException(530, `frame_max=${frameMax} < ${FRAME_MIN} min size`);
  }
  if (frameMax > limits.frameMax) {
    throw new AmqpException(530, `frame_max=${frameMax} > ${limits.frameMax} max size`);
  }
  if (channelMax < 1) throw new AmqpException(530, `channel_max=${channelMax} < 1 min`);
  if (channelMax > limits.channelMax) {
    throw new AmqpException(530, `channel_max=${channelMax} > ${limits.channelMax} max`);
  }
  return { frameMax, channelMax, heartbeatMs: a.heartbeat * 1000 };
}

/** The user and password of a PLAIN or AMQPLAIN response, or undefined. */
function parseCredentials(
  mechanism: string,
  response: Uint8Array,
): { user: string; password: string } | undefined {
  const bytes = Buffer.from(response.buffer, response.byteOffset, response.byteLength);
  if (mechanism === 'PLAIN') {
    const parts = bytes.toString('utf8').split('\0');
    if (parts.length !== 3) return undefined;
    return { user: parts[1]!, password: parts[2]! };
  }
  if (mechanism === 'AMQPLAIN') {
    // A field table without its length prefix.
    const framed = Buffer.alloc(4 + bytes.length);
    framed.writeUInt32BE(bytes.length, 0);
    bytes.copy(framed, 4);
    const table = readTable(new Reader(framed));
    const { LOGIN: user, PASSWORD: password } = table;
    if (typeof user !== 'string' || typeof password !== 'string') return undefined;
    return { user, password };
  }
  return undefined;
}
