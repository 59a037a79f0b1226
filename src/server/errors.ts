/**
 * AMQP exceptions as the server raises them: a channel exception closes one channel (403, 404,
 * 405, 406), a connection exception the whole connection (501-505, 530, 540, 541). Errors of the
 * broker map by their `replyCode`; any other error is a failure of the server itself, 541
 * INTERNAL_ERROR closing the connection, as RabbitMQ answers an internal error.
 */
import { ClosedError, MqliteError } from '../errors.js';

const TEXT: Record<number, string> = {
  200: 'OK',
  311: 'CONTENT_TOO_LARGE',
  312: 'NO_ROUTE',
  320: 'CONNECTION_FORCED',
  402: 'INVALID_PATH',
  403: 'ACCESS_REFUSED',
  404: 'NOT_FOUND',
  405: 'RESOURCE_LOCKED',
  406: 'PRECONDITION_FAILED',
  501: 'FRAME_ERROR',
  502: 'SYNTAX_ERROR',
  503: 'COMMAND_INVALID',
  504: 'CHANNEL_ERROR',
  505: 'UNEXPECTED_FRAME',
  506: 'RESOURCE_ERROR',
  530: 'NOT_ALLOWED',
  540: 'NOT_IMPLEMENTED',
  541: 'INTERNAL_ERROR',
};

/** Codes that close the connection rather than the channel. */
const CONNECTION_CODES = new Set([320, 402, 501, 502, 503, 504, 505, 506, 530, 540, 541]);

/** An AMQP exception the server sends as channel.close or connection.close. */
export class AmqpException extends Error {
  override name = 'AmqpException';
  /** The reply text: the code's name, a dash, the detail (at most 255 bytes). */
  readonly replyText: string;
  constructor(
    readonly replyCode: number,
    detail: string,
    /**
     * What the server's log says beyond the reply text, which tells the client less (a refused
     * login's reason, as RabbitMQ logs it and keeps from the client).
     */
    readonly logDetail?: string,
  ) {
    const text = `${TEXT[replyCode] ?? 'ERROR'} - ${detail}`;
    super(text);
    this.replyText = truncate(text);
  }

  /** Whether it closes the connection (else only its channel). */
  get closesConnection(): boolean {
    return CONNECTION_CODES.has(this.replyCode);
  }
}

/**
 * The exception to send for an error a broker call raised. A `ClosedError` is no client's fault:
 * while the broker is closing it is the shutdown that closes every connection (320, as RabbitMQ's
 * shutdown), otherwise a queue closed under the call, gone as far as the client can tell (404 on
 * the channel, as RabbitMQ answers for a queue that went away).
 */
export function toAmqpException(error: unknown, brokerClosed: boolean): AmqpException {
  if (error instanceof AmqpException) return error;
  if (error instanceof ClosedError) {
    return brokerClosed
      ? new AmqpException(320, "broker forced connection closure with reason 'shutdown'")
      : new AmqpException(404, detailOf(error));
  }
  if (error instanceof MqliteError) {
    return new AmqpException(error.replyCode, detailOf(error));
  }
  return new AmqpException(541, error instanceof Error ? error.message : String(error));
}

/** The broker's message already reads "CODE - detail": the detail. */
function detailOf(error: MqliteError): string {
  return error.message.replace(/^[A-Z_]+ - /, '');
}

/** 541 INTERNAL_ERROR for an error that is no client's doing: `what` failed, and why. */
export function internalError(what: string, error: unknown): AmqpException {
  return new AmqpException(
    541,
    `${what}: ${error instanceof Error ? error.message : String(error)}`,
  );
}

function truncate(text: string): string {
  if (Buffer.byteLength(text) <= 255) return text;
  let cut = text.slice(0, 255);
  while (Buffer.byteLength(cut) > 255) cut = cut.slice(0, -1);
  return cut;
}
