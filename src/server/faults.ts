/**
 * Faults a test injects into a running server: connections closed (320) or dropped, connection
 * attempts refused, channels closed with an error, frames delayed, connections stalled,
 * publishers blocked (through the memory alarm's own machinery). `listen()` takes one
 * `ServerFaults` as its `faults` option and consults it as clients connect; `mqlite/testing/server`
 * drives it. Every fault is reported on `mqlite:fault` and touches no stored data: what a closed
 * connection held unacknowledged is requeued, as on any connection's end.
 */
import type { Socket } from 'node:net';
import { type FaultEvent, faultChannel } from '../diagnostics.js';
import { ClosedError } from '../errors.js';
import type { AmqpConnection } from './connection.js';
import { AmqpException } from './errors.js';
import type { ResourceAlarms } from './resource-alarm.js';

/**
 * How a refused connection attempt ends: `'reset'`, a TCP reset as the client connects; 530 or
 * 541, connection.close at connection.open (RabbitMQ's answer for a vhost refused, or down).
 */
export type Refusal = 'reset' | 530 | 541;

/** Which connections a fault hits; without criteria, every one. */
export interface ConnectionMatch {
  /** The client-provided name (`connection_name`): equal to a string, or matching a RegExp. */
  readonly name?: string | RegExp;
  /** The client's `address:port`, as {@link ConnectionInfo} gives it: one connection. */
  readonly peer?: string;
}

/** A connection open on the server. */
export interface ConnectionInfo {
  readonly peer: string;
  /** Its client-provided name, if it gave one. */
  readonly name: string | undefined;
  readonly user: string;
  readonly vhost: string | undefined;
}

/** Channel errors a test may raise, with the texts RabbitMQ gives them by default. */
const CHANNEL_ERRORS: Readonly<Record<number, string>> = {
  404: 'no queue or exchange of that name',
  406: 'precondition failed',
  541: 'an internal error of the broker',
};

export class ServerFaults {
  #connections: ReadonlySet<AmqpConnection> = new Set();
  #alarm: ResourceAlarms | undefined;
  #refusals = 0;
  #refusal: Refusal = 'reset';

  /**
   * The connections and memory alarm of the server now listening (a restarted one replaces the
   * last).
   * @internal
   */
  attach(connections: ReadonlySet<AmqpConnection>, alarm: ResourceAlarms): void {
    this.#connections = connections;
    this.#alarm = alarm;
  }

  /** The connections open now. */
  connections(): ConnectionInfo[] {
    return [...this.#connections].map((c) => ({
      peer: c.peer,
      name: c.clientName,
      user: c.user,
      vhost: c.vhost,
    }));
  }

  /**
   * Closes the matching connections as RabbitMQ's `close_connection` does: connection.close
   * 320 CONNECTION_FORCED with `reason`; or, with `drop`, destroys their sockets without a
   * frame. Resolves, with how many were hit, once they are gone.
   */
  async close(
    match: ConnectionMatch = {},
    how: { readonly drop?: boolean; readonly reason?: string } = {},
  ): Promise<number> {
    const hit = this.#matching(match);
    const reason = how.reason ?? 'Closed via management plugin';
    await Promise.all(
      hit.map((c) => {
        report(how.drop ? 'drop' : 'close', c, how.drop ? undefined : `320 ${reason}`);
        return how.drop ? c.drop() : c.close(320, reason);
      }),
    );
    return hit.length;
  }

  /**
   * Refuses the next `count` connection attempts `how`, then accepts again.
   * @throws RangeError for a count that is not a whole number, or an unknown `how`.
   */
  refuse(count: number, how: Refusal = 'reset'): void {
    if (!Number.isSafeInteger(count) || count < 0) {
      throw new RangeError(`refuse needs a whole number of attempts, got ${count}`);
    }
    if (how !== 'reset' && how !== 530 && how !== 541) {
      throw new RangeError(`a connection is refused by 'reset', 530 or 541, not ${String(how)}`);
    }
    this.#refusals = count;
    this.#refusal = how;
  }

  /** Attempts still to refuse. */
  get refusing(): number {
    return this.#refusals;
  }

  /** `listen()`: a socket connected. False when it was refused by a reset. */
  admit(socket: Socket): boolean {
    if (this.#refusals === 0 || this.#refusal !== 'reset') return true;
    this.#refusals--;
    faultChannel.publish({ fault: 'refuse', detail: 'reset' } satisfies FaultEvent);
    socket.resetAndDestroy();
    return false;
  }

  /** `listen()`: a connection opens `vhost`. Throws the 530 or 541 of a refused attempt. */
  open(user: string, vhost: string): void {
    if (this.#refusals === 0 || this.#refusal === 'reset') return;
    this.#refusals--;
    faultChannel.publish({ fault: 'refuse', detail: String(this.#refusal) } satisfies FaultEvent);
    throw this.#refusal === 530
      ? new AmqpException(530, `access to vhost '${vhost}' refused for user '${user}'`)
      : new AmqpException(
          541,
          `access to vhost '${vhost}' refused for user '${user}': vhost '${vhost}' is down`,
        );
  }

  /**
   * Closes channel `channel` of the matching connections with `code` (404, 406; or 541, which
   * closes the connection, as AMQP has it) and `text` after the code's name. Returns how many
   * channels it closed.
   * @throws RangeError for another code.
   */
  closeChannel(match: ConnectionMatch, channel: number, code: number, text?: string): number {
    const detail = CHANNEL_ERRORS[code];
    if (detail === undefined) {
      throw new RangeError(`a channel is closed with 404, 406 or 541, not ${code}`);
    }
    const error = new AmqpException(code, text ?? detail);
    let closed = 0;
    for (const c of this.#matching(match)) {
      if (!c.closeChannel(channel, error)) continue;
      closed++;
      report('close-channel', c, error.replyText);
    }
    return closed;
  }

  /**
   * Delays every frame to the matching connections by `ms` on the server's clock (0: no more
   * delay); returns how many. With a `ManualClock`, frames wait for `advance()`.
   * @throws RangeError for a negative or non-finite delay.
   */
  delay(ms: number, match: ConnectionMatch = {}): number {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`a delay is a non-negative number of ms, got ${ms}`);
    }
    const hit = this.#matching(match);
    for (const c of hit) {
      c.delayFrames(ms);
      report('delay', c, `${ms} ms`);
    }
    return hit.length;
  }

  /** Stops reading and writing the matching connections; returns how many. */
  stall(match: ConnectionMatch = {}): number {
    const hit = this.#matching(match);
    for (const c of hit) {
      c.stall();
      report('stall', c);
    }
    return hit.length;
  }

  /**
   * Raises the memory alarm whatever memory reads, as `rabbitmqctl set_vm_memory_high_watermark 0`
   * does: every connection that publishes is blocked at its next publish (`connection.blocked`,
   * reason 'low on memory', to those that announced the capability) and not read until
   * `unblock()`; what it published meanwhile waits, and is routed then. Consumers go on. A
   * restart clears it, as on RabbitMQ.
   */
  block(): void {
    this.#attached().hold(true);
    if (faultChannel.hasSubscribers) faultChannel.publish({ fault: 'block' } satisfies FaultEvent);
  }

  /** Lifts `block()`: the blocked connections get `connection.unblocked` and are read again. */
  unblock(): void {
    this.#attached().hold(false);
    if (faultChannel.hasSubscribers) {
      faultChannel.publish({ fault: 'unblock' } satisfies FaultEvent);
    }
  }

  #attached(): ResourceAlarms {
    if (!this.#alarm) throw new ClosedError('no server uses these faults yet');
    return this.#alarm;
  }

  #matching(match: ConnectionMatch): AmqpConnection[] {
    return [...this.#connections].filter(
      (c) =>
        (match.peer === undefined || c.peer === match.peer) &&
        (match.name === undefined ||
          (typeof match.name === 'string'
            ? c.clientName === match.name
            : c.clientName !== undefined && match.name.test(c.clientName))),
    );
  }
}

function report(fault: FaultEvent['fault'], c: AmqpConnection, detail?: string): void {
  if (!faultChannel.hasSubscribers) return;
  faultChannel.publish({
    fault,
    peer: c.peer,
    ...(c.clientName === undefined ? {} : { name: c.clientName }),
    ...(detail === undefined ? {} : { detail }),
  } satisfies FaultEvent);
}
