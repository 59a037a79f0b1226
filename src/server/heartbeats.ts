/**
 * A connection's timer: the handshake's deadline, then heartbeats both ways (one sent after half
 * an interval of our silence, the peer dropped after two intervals of its own, as RabbitMQ does),
 * then the wait for the peer's close-ok, and for the peer to close its socket. One timer at a
 * time, on the injectable clock.
 */
import type { Clock, TimerHandle } from '../clock.js';

/**
 * How long the socket stays open after close-ok for the peer to close it, at most: RabbitMQ's
 * closing timeout (or the heartbeat interval, when shorter).
 */
const CLOSING_TIMEOUT_MS = 30_000;
/**
 * How long a connection that failed its handshake waits before its socket closes, without a
 * connection.close (RabbitMQ's silent close delay: it slows down a client guessing passwords).
 */
const SILENT_CLOSE_DELAY_MS = 3000;

/** What heartbeats do to their connection. */
export interface HeartbeatPeer {
  /** While the socket is not read, the peer's heartbeats wait unread: no silence counts. */
  readonly readPaused: boolean;
  /** Sends a heartbeat frame now. */
  sendHeartbeat(): void;
  /** The peer is gone: the connection ends without a close. */
  drop(): void;
}

export class Heartbeats {
  readonly #clock: Clock;
  #lastRead: number;
  #lastWrite: number;
  #timer: TimerHandle | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
    this.#lastRead = this.#lastWrite = clock.now();
  }

  /** Bytes of the peer were read; or the socket is read again, and its silence counts from now. */
  read(): void {
    this.#lastRead = this.#clock.now();
  }

  /** Bytes were written to the peer. */
  wrote(): void {
    this.#lastWrite = this.#clock.now();
  }

  /** Runs `expired` in `ms`, in place of the heartbeats or the deadline before. */
  deadline(expired: () => void, ms: number): void {
    this.stop();
    this.#timer = this.#clock.setTimeout(expired, ms);
  }

  /** Runs `drop` once a peer past close-ok had its time to close the socket (see the top). */
  linger(heartbeatMs: number, drop: () => void): void {
    const ms =
      heartbeatMs > 0 && heartbeatMs < CLOSING_TIMEOUT_MS ? heartbeatMs : CLOSING_TIMEOUT_MS;
    this.deadline(drop, ms);
  }

  /** Runs `drop` after the silent close delay of a failed handshake. */
  silentClose(drop: () => void): void {
    this.deadline(drop, SILENT_CLOSE_DELAY_MS);
  }

  /** Starts heartbeats every `intervalMs` (0: none), in place of the handshake's deadline. */
  start(intervalMs: number, peer: HeartbeatPeer): void {
    this.stop();
    if (intervalMs === 0) return;
    const clock = this.#clock;
    const tick = intervalMs / 2;
    const beat = () => {
      const now = clock.now();
      if (!peer.readPaused && now - this.#lastRead >= 2 * intervalMs) {
        // A peer silent for two intervals is gone: drop it without a close (as RabbitMQ).
        peer.drop();
        return;
      }
      if (now - this.#lastWrite >= tick) peer.sendHeartbeat();
      this.#timer = clock.setTimeout(beat, tick);
    };
    this.#timer = clock.setTimeout(beat, tick);
  }

  stop(): void {
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
