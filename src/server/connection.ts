/**
 * One client connection: its frames dispatched to its channels (channel.ts) in the states of its
 * handshake (handshake.ts), connection exceptions, and the end, releasing every channel. Its
 * timers are heartbeats.ts, its output and the socket's drain output.ts. Flow control on input:
 * the socket is not read while too much work waits for the broker (methods queued behind a slow
 * one, publishes waiting for storage).
 */
import type { Socket } from 'node:net';
import type { Broker } from '../broker/broker.js';
import type { BrokerSession } from '../broker/session.js';
import type { Clock } from '../clock.js';
import type { LivePermissions } from './auth.js';
import { AmqpChannel } from './channel.js';
import type { ChannelHost } from './channel-host.js';
import { DueConfirms } from './confirms.js';
import { AmqpException, internalError } from './errors.js';
import type { ConnectionEvent } from './events.js';
import {
  type ConnectionState,
  checkConnectionMethod,
  checkHeartbeat,
  decodeMethod,
  isHandshaking,
  unexpectedFrame,
} from './frame-rules.js';
import {
  CONNECTION_START,
  HANDSHAKE_FRAME_MAX,
  hasCapability,
  login,
  PROTOCOL_HEADER,
  tuning,
} from './handshake.js';
import { Heartbeats } from './heartbeats.js';
import type { Limits } from './limits.js';
import type { VhostCounts } from './message-counts.js';
import { ConnectionOutput } from './output.js';
import type { Permissions } from './permissions.js';
import type { ReplyAddresses } from './reply-to.js';
import { WireSyntaxError, type Writer } from './wire/bytes.js';
import { FrameError, FrameParser } from './wire/frames.js';
import {
  FRAME_BODY,
  FRAME_HEADER,
  FRAME_HEARTBEAT,
  FRAME_METHOD,
  type OutArgs,
  writeHeartbeat,
  writeMethod,
} from './wire/methods.js';
import { PublishReader } from './wire/publish-method.js';
import { type Method, type MethodName, methodById } from './wire/spec.js';

/** Heartbeat proposed in connection.tune by default, seconds (RabbitMQ's). */
export const HEARTBEAT_SECONDS = 60;
/**
 * Work waiting for the broker (methods queued behind a slow one, publishes waiting for storage)
 * at which the connection stops reading its socket, and at which it reads again.
 */
const BACKLOG_HIGH = 1024;
const BACKLOG_LOW = 256;
// No `connection.blocked` is sent while the socket is not read for its backlog: this is flow
// control, like RabbitMQ's credit flow, which is silent; clients take `connection.blocked` for a
// resource alarm (see `setAlarm`), and amqp-client rejects every publish while blocked.

/** What a connection needs from its server. */
export interface ConnectionOptions {
  readonly clock: Clock;
  /** The server's direct reply-to addresses. */
  readonly replies: ReplyAddresses;
  /** Whether a login is accepted. */
  readonly authenticate: (user: string, password: string) => boolean;
  /**
   * The broker of the vhost connection.open names, and what the user may do in it.
   * @throws AmqpException (530) when the user may not open it or the server is full.
   */
  readonly openVhost: (user: string, vhost: string) => OpenedVhost;
  readonly limits: Limits;
  /** The socket is a TLS one. */
  readonly tls: boolean;
  readonly onEvent: ((event: ConnectionEvent) => void) | undefined;
  /** Heartbeat proposed in connection.tune, seconds (0: none). */
  readonly heartbeat: number;
  /** Time allowed for the handshake, ms. */
  readonly handshakeTimeout: number;
  /** The connection ended and released everything. */
  readonly onEnd: (connection: AmqpConnection) => void;
}

/** A vhost a connection opened: its broker and the user's permissions there. */
export interface OpenedVhost {
  readonly broker: Broker;
  /** The user's permissions there, as they are when each method is checked. */
  readonly permissions: LivePermissions;
  readonly counts: VhostCounts | undefined;
}

export class AmqpConnection implements ChannelHost {
  readonly replies: ReplyAddresses;
  readonly dueConfirms = new DueConfirms();
  user = '';
  vhost: string | undefined;
  frameMax = HANDSHAKE_FRAME_MAX;
  cancelNotify = false;
  /** The client-provided name (`connection_name` of its client properties), if it gave one. */
  clientName: string | undefined;
  /** The client properties of its start-ok. */
  clientProperties: Readonly<Record<string, unknown>> = {};
  /** When the client connected, on the server's clock. */
  readonly connectedAt: number;
  /** The client announced `authentication_failure_close`: a refused login is told, not silent. */
  #authFailureClose = false;
  readonly #socket: Socket;
  readonly #options: ConnectionOptions;
  #state: ConnectionState = 'header';
  #header = Buffer.alloc(0);
  readonly #parser = new FrameParser(HANDSHAKE_FRAME_MAX);
  readonly #publishes = new PublishReader();
  readonly #channels = new Map<number, AmqpChannel>();
  #channelMax: number;
  #opened: (OpenedVhost & { readonly session: BrokerSession }) | undefined;
  /** The client's `address:port`, read while the socket is open. */
  readonly #peer: string;
  /** The reply text of the connection.close the server sent to end the connection. */
  #closeReason: string | undefined;
  readonly #output: ConnectionOutput;
  readonly #heartbeats: Heartbeats;
  #backlog = 0;
  #backlogHigh = false;
  /** The resources whose alarm is in effect: while any is, the next publish blocks. */
  #alarms: readonly string[] = [];
  /** Blocked by the alarm: the socket is not read until it clears. */
  #blocked = false;
  /** The client announced `connection.blocked`, and was sent one (so it gets `unblocked`). */
  #blockedNotify = false;
  #sentBlocked = false;
  #readPaused = false;
  /** Neither read nor written to any more (a test's fault): the peer's heartbeat check fires. */
  #stalled = false;
  #heartbeatMs = 0;
  #ended: Promise<void> | undefined;
  #resolveDone!: () => void;
  readonly #done = new Promise<void>((resolve) => {
    this.#resolveDone = resolve;
  });
  #resolveSocketClosed!: () => void;
  readonly #socketClosed = new Promise<void>((resolve) => {
    this.#resolveSocketClosed = resolve;
  });

  constructor(socket: Socket, options: ConnectionOptions) {
    this.#socket = socket;
    this.#options = options;
    this.replies = options.replies;
    this.#channelMax = options.limits.channelMax;
    this.connectedAt = options.clock.now();
    const address = socket.remoteAddress ?? 'unknown';
    this.#peer = `${address.includes(':') ? `[${address}]` : address}:${socket.remotePort ?? 0}`;
    this.#heartbeats = new Heartbeats(options.clock);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    this.#output = new ConnectionOutput(
      socket,
      this.#heartbeats,
      () => {
        for (const channel of this.#channels.values()) channel.setWritable();
      },
      (error) => this.fail(internalError('a frame could not be encoded', error), 0, 0),
    );
    socket.on('error', () => {});
    socket.on('close', () => {
      // The linger after close-ok (if any) is over.
      this.#heartbeats.stop();
      this.#resolveSocketClosed();
      void this.end();
    });
    this.#heartbeats.deadline(() => {
      if (this.#state !== 'running' && this.#state !== 'ended') this.#destroy();
    }, options.handshakeTimeout);
    this.#report('accepted');
  }

  /** The broker of the vhost opened. */
  get broker(): Broker {
    return this.#open().broker;
  }

  get session(): BrokerSession {
    return this.#open().session;
  }

  /** The message counters of the vhost opened. */
  get counts(): VhostCounts | undefined {
    return this.#open().counts;
  }

  /** What the user may do in the vhost opened. */
  get permissions(): Permissions {
    return this.#open().permissions.current;
  }

  /** False while the socket is not draining. */
  get writable(): boolean {
    return this.#output.writable;
  }

  /** The open channels. */
  get channels(): ReadonlyMap<number, AmqpChannel> {
    return this.#channels;
  }

  /** Whether it came over TLS. */
  get tls(): boolean {
    return this.#options.tls;
  }

  /** Whether it has opened a vhost and not yet closed. */
  get running(): boolean {
    return this.#state === 'running';
  }

  /** The client's `address:port`. */
  get peer(): string {
    return this.#peer;
  }

  /** The body size limit of publishes. */
  get maxMessageBytes(): number {
    return this.#options.limits.maxMessageBytes;
  }

  #open(): OpenedVhost & { readonly session: BrokerSession } {
    if (!this.#opened) throw new AmqpException(503, 'the connection has no vhost open');
    return this.#opened;
  }

  #report(type: ConnectionEvent['type']): void {
    const onEvent = this.#options.onEvent;
    if (!onEvent) return;
    onEvent({
      type,
      peer: this.#peer,
      tls: this.#options.tls,
      ...(this.user === '' ? {} : { user: this.user }),
      ...(this.vhost === undefined ? {} : { vhost: this.vhost }),
      ...(type === 'closed' && this.#closeReason !== undefined
        ? { reason: this.#closeReason }
        : {}),
    });
  }

  /** Ends the connection and releases its channels, consumers and exclusive queues. */
  end(): Promise<void> {
    this.#ended ??= this.#release();
    return this.#ended;
  }

  /**
   * Closes the connection from the server's side (320 when the server stops): connection.close,
   * then the end once the client's close-ok came (or it did not in time). A connection past its
   * close-ok, waiting for the peer to close its socket, is dropped at once.
   */
  close(replyCode: number, detail: string): Promise<void> {
    if (this.#state === 'running') {
      this.fail(new AmqpException(replyCode, detail), 0, 0);
    } else if (this.#state !== 'closing') {
      this.#destroy();
    }
    return this.#done;
  }

  /** Destroys the socket without a close frame, as a network failure does. */
  drop(): Promise<void> {
    this.#destroy();
    return this.#done;
  }

  /**
   * Raises `error` on channel `id` as if a method there had failed: channel.close for a channel
   * exception, connection.close for a connection one. False when no such channel is open.
   */
  closeChannel(id: number, error: AmqpException): boolean {
    const channel = this.#channels.get(id);
    if (!channel || this.#state !== 'running') return false;
    channel.exception(error, 0, 0);
    return true;
  }

  /**
   * Stops reading and writing, heartbeats included, until the peer gives up and goes. Unread,
   * its going is not seen: with heartbeats on, the server gives it up too, as RabbitMQ does a
   * silent peer, so its consumers and unacked messages do not stay with it. It waits six
   * intervals, so the client's own check (two or three) fires well before.
   */
  stall(): void {
    this.#stalled = this.#readPaused = true;
    this.#socket.pause();
    this.#output.close();
    if (this.#heartbeatMs > 0)
      this.#heartbeats.deadline(() => this.#destroy(), 6 * this.#heartbeatMs);
    else this.#heartbeats.stop();
  }

  /** Sends every frame from now on `ms` later on the server's clock (0: at once again). */
  delayFrames(ms: number): void {
    this.#output.delay(ms, this.#options.clock);
  }

  // --- ChannelHost ---------------------------------------------------------------------------

  write(build: (w: Writer) => void): void {
    this.#output.write(build);
  }

  output(): Writer | undefined {
    // After connection.close, only the close handshake goes out (deliveries racing it do not).
    return this.#state === 'closing' ? undefined : this.#output.writer();
  }

  appended(): void {
    this.#output.appended();
  }

  outputFailed(error: unknown): void {
    this.#output.failed(error);
  }

  #send<N extends MethodName>(channel: number, name: N, args: OutArgs<N>): void {
    this.write((w) => writeMethod(w, channel, name, args));
  }

  fail(error: AmqpException, classId: number, methodId: number): void {
    if (this.#state === 'closing' || this.#state === 'ended') return;
    this.#closeReason =
      error.logDetail === undefined ? error.replyText : `${error.replyText} (${error.logDetail})`;
    if (isHandshaking(this.#state)) {
      // Before tune-ok, RabbitMQ sends no connection.close: it waits, then closes the socket.
      // Only a refused login is told, to a client that announced authentication_failure_close.
      if (error.replyCode !== 403 || !this.#authFailureClose) {
        this.#setEnded();
        this.#heartbeats.silentClose(() => this.#destroy());
        return;
      }
      classId = methodId = 0;
    }
    this.#send(0, 'connection.close', {
      replyCode: error.replyCode,
      replyText: error.replyText,
      classId,
      methodId,
    });
    this.#state = 'closing';
    for (const channel of this.#channels.values()) void channel.teardown();
    // A peer that never answers close-ok is dropped after a while.
    this.#heartbeats.deadline(() => this.#destroy(), 5000);
  }

  backlog(delta: number): void {
    this.#backlog += delta;
    if (!this.#backlogHigh && this.#backlog >= BACKLOG_HIGH) this.#backlogHigh = true;
    else if (this.#backlogHigh && this.#backlog <= BACKLOG_LOW) this.#backlogHigh = false;
    else return;
    this.#updateReading();
  }

  /**
   * A resource alarm went on or off. As on RabbitMQ, a connection under the alarm is blocked at
   * its next publish: `connection.blocked` if it announced the capability, and its socket is not
   * read (the publish's content and what follows wait) until the alarm clears, when it gets
   * `connection.unblocked` and is read again. Consuming and acking go on.
   */
  setAlarm(resources: readonly string[]): void {
    this.#alarms = resources;
    if (resources.length > 0 || !this.#blocked) return;
    this.#blocked = false;
    if (this.#sentBlocked && this.#state === 'running') this.#send(0, 'connection.unblocked', {});
    this.#sentBlocked = false;
    this.#updateReading();
    // Frames read before the block and held since.
    this.#onData(Buffer.alloc(0));
  }

  /** Blocks the connection under the alarm, after the publish that met it; returns false. */
  #block(): boolean {
    this.#blocked = true;
    if (this.#blockedNotify) {
      // RabbitMQ's words: `low on memory`, `low on disk`, both joined by ` & `.
      const reason = this.#alarms.map((resource) => `low on ${resource}`).join(' & ');
      this.#send(0, 'connection.blocked', { reason });
      this.#sentBlocked = true;
    }
    this.#updateReading();
    return false;
  }

  /** Reads the socket unless the backlog or the alarm stops it. */
  #updateReading(): void {
    // A stalled connection stays unread whatever else changes.
    if (this.#stalled) return;
    const paused = this.#backlogHigh || this.#blocked;
    if (paused === this.#readPaused) return;
    this.#readPaused = paused;
    if (paused) {
      this.#socket.pause();
      return;
    }
    // The peer's heartbeats waited unread: its silence counts from now (as RabbitMQ).
    this.#heartbeats.read();
    this.#socket.resume();
  }

  released(channel: number): void {
    this.#channels.delete(channel);
  }

  // --- input ---------------------------------------------------------------------------------

  #onData(chunk: Buffer): void {
    this.#heartbeats.read();
    if (this.#state === 'ended') return;
    if (this.#state === 'header') {
      const header = Buffer.concat([this.#header, chunk]);
      if (header.length < 8) {
        this.#header = header;
        return;
      }
      if (!header.subarray(0, 8).equals(PROTOCOL_HEADER)) {
        // The version this server speaks, then close (AMQP 0-9-1 §4.2.2).
        this.#socket.end(PROTOCOL_HEADER);
        this.#setEnded();
        return;
      }
      this.#state = 'start-ok';
      this.#send(0, 'connection.start', CONNECTION_START);
      chunk = header.subarray(8);
      if (chunk.length === 0) return;
    }
    try {
      this.#parser.push(chunk, this.#frameHandler, this.#ackHandler);
    } catch (error) {
      if (error instanceof FrameError || error instanceof WireSyntaxError) {
        this.fail(new AmqpException(501, error.message), 0, 0);
      } else if (error instanceof AmqpException) this.fail(error, 0, 0);
      else this.fail(internalError('the frame failed', error), 0, 0);
    }
  }

  readonly #frameHandler = (
    type: number,
    channel: number,
    bytes: Buffer,
    start: number,
    end: number,
  ): boolean => this.#onFrame(type, channel, bytes, start, end);
  readonly #ackHandler = (channel: number, tag: number, multiple: boolean): boolean | undefined =>
    this.#onAck(channel, tag, multiple);

  /**
   * A basic.ack, read in place, for an open channel of a running connection (undefined for any
   * other: the generic path answers it).
   */
  #onAck(channelId: number, deliveryTag: number, multiple: boolean): boolean | undefined {
    if (channelId === 0 || this.#state !== 'running') return undefined;
    const channel = this.#channels.get(channelId);
    if (!channel) return undefined;
    try {
      channel.onAck(deliveryTag, multiple);
    } catch (error) {
      if (error instanceof AmqpException) this.fail(error, 60, 80);
      else throw error;
    }
    return (this.#state as ConnectionState) !== 'ended';
  }

  /** A frame, `bytes[start, end)` its payload: views are made only off the paths of a publish. */
  #onFrame(type: number, channelId: number, bytes: Buffer, start: number, end: number): boolean {
    if (this.#state === 'ended') return false;
    if (type === FRAME_HEARTBEAT) {
      checkHeartbeat(type, channelId, bytes.subarray(start, end));
      return true;
    }
    if (this.#state === 'closing') {
      // After connection.close only close and close-ok count (AMQP 0-9-1 §4.2.8).
      if (type === FRAME_METHOD && channelId === 0 && end - start >= 4) {
        this.#onClosingMethod(bytes.readUInt16BE(start), bytes.readUInt16BE(start + 2));
      }
      return (this.#state as ConnectionState) !== 'ended';
    }
    if (channelId !== 0 && this.#state !== 'running') {
      throw unexpectedFrame(type, bytes.subarray(start, end));
    }
    if (type === FRAME_HEADER || type === FRAME_BODY) {
      if (channelId === 0) throw unexpectedFrame(type, bytes.subarray(start, end));
      const channel = this.#channels.get(channelId);
      if (!channel) {
        throw new AmqpException(504, `content frame on channel ${channelId}, which is not open`);
      }
      // No closure per frame: two of them come with every message.
      try {
        channel.onContent(type === FRAME_HEADER, bytes, start, end);
      } catch (error) {
        if (error instanceof AmqpException) this.fail(error, 60, 40);
        else throw error;
      }
      return (this.#state as ConnectionState) !== 'ended';
    }
    const publish = channelId !== 0 ? this.#publishes.read(bytes, start, end) : undefined;
    if (publish && this.#state === 'running') {
      const channel = this.#channels.get(channelId);
      if (channel) return this.#onPublish(channel, publish);
    }
    const { classId, methodId, method, error } = decodeMethod(type, bytes.subarray(start, end));
    if (!method) {
      this.fail(error!, classId, methodId);
      return (this.#state as ConnectionState) !== 'ended';
    }
    this.#guarded(classId, methodId, () => {
      if (channelId === 0) this.#onConnectionMethod(method);
      else this.#onChannelMethod(channelId, method);
    });
    if (method.name === 'basic.publish' && this.#alarms.length > 0 && !this.#blocked)
      return this.#block();
    return (this.#state as ConnectionState) !== 'ended';
  }

  /** A basic.publish read in place, for an open channel: as the generic path runs it. */
  #onPublish(channel: AmqpChannel, publish: Method): boolean {
    try {
      channel.onMethod(publish);
    } catch (error) {
      if (error instanceof AmqpException) this.fail(error, 60, 40);
      else throw error;
    }
    if (this.#alarms.length > 0 && !this.#blocked) return this.#block();
    return (this.#state as ConnectionState) !== 'ended';
  }

  /** While the server's connection.close waits for its close-ok, only close and close-ok count. */
  #onClosingMethod(classId: number, methodId: number): void {
    const name = methodById(classId, methodId)?.name;
    if (name === 'connection.close-ok') this.#closed(true);
    else if (name === 'connection.close') this.#send(0, 'connection.close-ok', {});
  }

  #guarded(classId: number, methodId: number, run: () => void): void {
    try {
      run();
    } catch (error) {
      if (error instanceof AmqpException) this.fail(error, classId, methodId);
      else throw error;
    }
  }

  #onConnectionMethod(method: Method): void {
    checkConnectionMethod(this.#state, method);
    switch (method.name) {
      case 'connection.start-ok': {
        this.#authFailureClose = hasCapability(method.args, 'authentication_failure_close');
        const { user, cancelNotify, blockedNotify } = login(
          method.args,
          this.#options.authenticate,
        );
        this.cancelNotify = cancelNotify;
        this.#blockedNotify = blockedNotify;
        this.clientProperties = method.args.clientProperties;
        const name = method.args.clientProperties.connection_name;
        if (typeof name === 'string') this.clientName = name;
        this.user = user;
        this.#state = 'tune-ok';
        const limits = this.#options.limits;
        this.#send(0, 'connection.tune', {
          channelMax: limits.channelMax,
          frameMax: limits.frameMax,
          heartbeat: this.#options.heartbeat,
        });
        return;
      }
      case 'connection.tune-ok': {
        const { frameMax, channelMax, heartbeatMs } = tuning(method.args, this.#options.limits);
        this.frameMax = frameMax;
        this.#parser.frameMax = frameMax;
        this.#channelMax = channelMax;
        this.#heartbeatMs = heartbeatMs;
        this.#state = 'open';
        return;
      }
      case 'connection.open': {
        const opened = this.#options.openVhost(this.user, method.args.virtualHost);
        this.#opened = { ...opened, session: opened.broker.session() };
        this.vhost = method.args.virtualHost;
        this.#state = 'running';
        this.#report('opened');
        this.#send(0, 'connection.open-ok', { knownHosts: '' });
        this.#startHeartbeat();
        return;
      }
      case 'connection.close':
        this.#send(0, 'connection.close-ok', {});
        this.#closed(false);
        return;
      case 'connection.close-ok':
        return;
      case 'connection.update-secret':
        this.#send(0, 'connection.update-secret-ok', {});
        return;
      case 'connection.blocked':
      case 'connection.unblocked':
        // Clients do not send these; RabbitMQ ignores them.
        return;
      default:
        throw new AmqpException(503, `'${method.name}' is not a client method`);
    }
  }

  #onChannelMethod(channelId: number, method: Method): void {
    if (method.def.classId === 10) {
      throw new AmqpException(503, `connection method '${method.name}' on channel ${channelId}`);
    }
    const channel = this.#channels.get(channelId);
    if (method.name === 'channel.open') {
      if (channel) throw new AmqpException(504, "second 'channel.open' seen");
      if (this.#channels.size >= this.#channelMax) {
        throw new AmqpException(
          530,
          `number of channels opened (${this.#channels.size}) has reached the negotiated channel_max (${this.#channelMax})`,
        );
      }
      this.#channels.set(channelId, new AmqpChannel(channelId, this));
      this.#send(channelId, 'channel.open-ok', { channelId: '' });
      return;
    }
    if (!channel) throw new AmqpException(504, "expected 'channel.open'");
    const { classId, methodId } = method.def;
    this.#guarded(classId, methodId, () => channel.onMethod(method));
  }

  // --- heartbeats and the end ----------------------------------------------------------------

  #startHeartbeat(): void {
    const connection = this;
    this.#heartbeats.start(this.#heartbeatMs, {
      get readPaused() {
        return connection.#readPaused;
      },
      sendHeartbeat: () => {
        this.write(writeHeartbeat);
        this.#output.flush();
      },
      drop: () => this.#destroy(),
    });
  }

  /** Drops the peer without a close (gone silent, too slow, or the server stops). */
  #destroy(): void {
    this.#setEnded();
    this.#socket.destroy();
    void this.end();
  }

  /**
   * close-ok was exchanged: the connection ends, but its socket is still read, and what arrives
   * dropped, until the peer closes it (RabbitMQ does the same). Closing a socket with bytes
   * unread resets the connection: the peer, still writing what it queued before its close,
   * would fail with ECONNRESET or EPIPE and could lose the close-ok. The server's side closes at
   * once after the close-ok the peer sent (nothing follows it); after the one the server sent,
   * the peer closes first. A peer that does not close in time is dropped.
   */
  #closed(closeOkReceived: boolean): void {
    this.#output.flush();
    if (closeOkReceived) this.#socket.end();
    // Releasing stops the heartbeats: the timer is the linger's from here.
    void this.end();
    if (this.#readPaused) {
      this.#readPaused = false;
      this.#socket.resume();
    }
    this.#heartbeats.linger(this.#heartbeatMs, () => this.#socket.destroy());
  }

  #setEnded(): void {
    this.#state = 'ended';
    this.#output.close();
  }

  /** Releases the channels and the session; the end comes once the socket is closed too. */
  async #release(): Promise<void> {
    this.#setEnded();
    this.#heartbeats.stop();
    const channels = [...this.#channels.values()];
    this.#channels.clear();
    for (const channel of channels) await channel.teardown();
    await this.#opened?.session.close().catch(() => {});
    await this.#socketClosed;
    this.#options.onEnd(this);
    this.#report('closed');
    this.#resolveDone();
  }
}
