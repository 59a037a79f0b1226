/**
 * What a connection accepts in each state of its life, and the exceptions RabbitMQ 3.10 raises,
 * in its words, for the rest: a frame the state does not allow (505 UNEXPECTED_FRAME), a
 * connection method out of turn (504 CHANNEL_ERROR), a frame that does not decode (501
 * FRAME_ERROR).
 */
import { AmqpException } from './errors.js';
import { Reader, WireSyntaxError } from './wire/bytes.js';
import { FrameError, octets } from './wire/frames.js';
import { readArgs } from './wire/methods.js';
import { classExists, type Method, type MethodName, methodById } from './wire/spec.js';

/** A connection's state: the method it waits for in the handshake, then running, closing. */
export type ConnectionState =
  | 'header'
  | 'start-ok'
  | 'tune-ok'
  | 'open'
  | 'running'
  | 'closing'
  | 'ended';

/** RabbitMQ's names of the states, in its reply texts. */
const STATE_NAMES: Record<ConnectionState, string> = {
  header: 'starting',
  'start-ok': 'starting',
  'tune-ok': 'tuning',
  open: 'opening',
  running: 'running',
  closing: 'closing',
  ended: 'closed',
};

/** Connection methods a client may send once the connection is open. */
const RUNNING_METHODS = new Set<MethodName>([
  'connection.close',
  'connection.close-ok',
  'connection.update-secret',
  'connection.blocked',
  'connection.unblocked',
]);

/** Before tune-ok: RabbitMQ answers an error here by closing the socket, without a close. */
export function isHandshaking(state: ConnectionState): boolean {
  return state === 'header' || state === 'start-ok' || state === 'tune-ok';
}

/**
 * Checks that `method`, on channel 0, is one the state allows: the next of the handshake (or
 * connection.close once tuned), then the connection methods of a running connection.
 * @throws AmqpException 504 for any other.
 */
export function checkConnectionMethod(state: ConnectionState, method: Method): void {
  const allowed =
    state === 'running'
      ? RUNNING_METHODS.has(method.name)
      : method.name === `connection.${state}` ||
        (state === 'open' && method.name === 'connection.close');
  if (!allowed) {
    throw new AmqpException(504, `unexpected method in connection state ${STATE_NAMES[state]}`);
  }
}

/** 505 UNEXPECTED_FRAME: a frame the connection's state does not allow. */
export function unexpectedFrame(type: number, payload: Buffer): AmqpException {
  return new AmqpException(505, `type ${type}, all octets = ${octets(payload)}`);
}

/**
 * Checks a heartbeat frame: empty, on channel 0.
 * @throws FrameError for one with a payload; AmqpException 505 for one on another channel.
 */
export function checkHeartbeat(type: number, channel: number, payload: Buffer): void {
  if (payload.length > 0) {
    throw new FrameError(`type ${type}, all octets = ${octets(payload)}: unknown_frame`);
  }
  if (channel !== 0) throw unexpectedFrame(type, payload);
}

/** A method frame decoded: its method, or the 501 its arguments raise. */
export interface DecodedMethod {
  readonly classId: number;
  readonly methodId: number;
  readonly method?: Method;
  readonly error?: AmqpException;
}

/**
 * Decodes a method frame's payload. Arguments cut short or followed by more bytes are 501
 * `cannot decode <<...>>` (their bytes), caused by the method.
 * @throws FrameError for a payload too short to name a method; AmqpException 540 for an unknown
 *   class or method.
 */
export function decodeMethod(type: number, payload: Buffer): DecodedMethod {
  if (payload.length < 4) {
    throw new FrameError(`type ${type}, all octets = ${octets(payload)}: unknown_frame`);
  }
  const r = new Reader(payload);
  const classId = r.u16();
  const methodId = r.u16();
  const def = methodById(classId, methodId);
  if (!def) {
    throw new AmqpException(
      540,
      classExists(classId)
        ? `unknown method ${methodId} of class ${classId}`
        : `unknown class ${classId}`,
    );
  }
  try {
    const method = readArgs(r, def);
    if (r.remaining > 0) throw new WireSyntaxError('bytes after the arguments');
    return { classId, methodId, method };
  } catch (error) {
    if (!(error instanceof WireSyntaxError)) throw error;
    const text = `cannot decode ${octets(payload.subarray(4))}`;
    return { classId, methodId, error: new AmqpException(501, text) };
  }
}
