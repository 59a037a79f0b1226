/**
 * One running shovel: it opens its source and destination, publishes each delivery as it arrives
 * (up to `src-prefetch-count` in flight) and acknowledges it as its `ack-mode` says once its
 * publish is confirmed (or sent), a run of them with one `multiple` ack (one the destination
 * nacks goes back to the source queue); it counts, and on any failure of either end closes both
 * (what was taken and not acknowledged goes back to the source queue), shows `terminated` with
 * the reason, and tries again after `reconnect-delay` on the broker's clock, with a URI of a list
 * chosen at random at each attempt. With `src-delete-after` it stops after that many messages and
 * deletes itself.
 */

import { maskUri, type ShovelDefinition } from '../broker/shovel-definition.js';
import type { ShovelHost, ShovelState, ShovelStatus } from '../broker/shovel-host.js';
import type { TimerHandle } from '../clock.js';
import { type ShovelEvent, shovelChannel } from '../diagnostics.js';
import {
  type Delivery,
  type Destination,
  OFFSET_HEADER,
  type OnFailure,
  type Source,
  type SourceSpec,
} from './endpoint.js';
import { forwarder } from './forward.js';
import { localDestination, localSource } from './local.js';
import { remoteDestination, remoteSource } from './remote.js';

const DEFAULT_PREFETCH = 1000;
const DEFAULT_RECONNECT_DELAY = 5;

export class Shovel {
  readonly #name: string;
  readonly #definition: ShovelDefinition;
  readonly #host: ShovelHost;
  readonly #onDeleted: () => void;
  /** How many messages to move before deleting itself; undefined: `never`. */
  #limit: number | undefined;
  #state: ShovelState = 'starting';
  #since: number;
  #reason: string | undefined;
  /** Bumped by each attempt and each failure: callbacks of an older attempt do nothing. */
  #attempt = 0;
  #stopped = false;
  #timer: TimerHandle | undefined;
  #source: Source | undefined;
  #destination: Destination | undefined;
  #sourceUri: string;
  #destinationUri: string;
  #forwarded = 0;
  #inFlight = 0;
  /** Publishes handed to a destination, held ones included (see `status()`). */
  #published = 0;
  /**
   * The deliveries taken and not yet acknowledged, in delivery order (the order of their tags),
   * each with whether its publish is settled.
   */
  #unacked = new Map<number, boolean>();
  /** The stream offsets of those deliveries, when the source is a stream. */
  #offsets = new Map<number, number>();
  /** An ack of the settled deliveries is queued. */
  #flushing = false;
  /** The source's count, kept once its link is closed: a local queue still counts what waits. */
  #pending: () => number | undefined = () => undefined;

  constructor(name: string, definition: ShovelDefinition, host: ShovelHost, onDeleted: () => void) {
    this.#name = name;
    this.#definition = definition;
    this.#host = host;
    this.#onDeleted = onDeleted;
    this.#since = host.clock.now();
    // Until the first attempt picks: the first of a list.
    this.#sourceUri = [definition['src-uri']].flat()[0]!;
    this.#destinationUri = [definition['dest-uri']].flat()[0]!;
    const after = definition['src-delete-after'];
    this.#limit = typeof after === 'number' ? after : undefined;
  }

  start(): void {
    void this.#run();
  }

  status(): ShovelStatus {
    const status = {
      name: this.#name,
      vhost: this.#host.broker.vhost,
      type: 'dynamic' as const,
      state: this.#state,
      since: this.#since,
      source: maskUri(this.#sourceUri),
      destination: maskUri(this.#destinationUri),
      forwarded: this.#forwarded,
      inFlight: this.#inFlight,
      pending: this.#pending(),
      ...this.#metrics(),
    };
    return this.#reason === undefined ? status : { ...status, reason: this.#reason };
  }

  /**
   * What RabbitMQ 4.x reports of a shovel: whether its destination takes messages, and its
   * counts. A message held while the destination is blocked is not published yet: it is still to
   * publish before `src-delete-after` is reached.
   */
  #metrics(): Pick<
    ShovelStatus,
    'blockedStatus' | 'published' | 'held' | 'remaining' | 'remainingUnacked'
  > {
    const destination = this.#destination;
    const held = destination?.held() ?? 0;
    const running = this.#state === 'running';
    const counts = {
      blockedStatus: running ? (destination?.blockedStatus() ?? 'running') : undefined,
      published: this.#published - held,
      held,
    };
    const limit = this.#limit;
    if (limit !== undefined) {
      const toPublish = limit - this.#forwarded - this.#inFlight + held;
      return { ...counts, remaining: limit - this.#forwarded, remainingUnacked: toPublish };
    }
    // `queue-length` is read as the shovel first starts.
    const known = this.#definition['src-delete-after'] !== 'queue-length';
    const unlimited = known ? 'unlimited' : undefined;
    return { ...counts, remaining: unlimited, remainingUnacked: unlimited };
  }

  /** Stops for good: closes both ends, the unacknowledged messages going back to the source. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#attempt++;
    if (this.#timer) this.#host.clock.clearTimeout(this.#timer);
    await this.#closeEnds();
  }

  async #run(): Promise<void> {
    const attempt = ++this.#attempt;
    const d = this.#definition;
    this.#sourceUri = pick(d['src-uri']);
    this.#destinationUri = pick(d['dest-uri']);
    this.#setState('starting');
    this.#unacked = new Map();
    this.#offsets = new Map();
    const fail: OnFailure = (error) => this.#fail(attempt, error);
    try {
      const ackMode = d['ack-mode'] ?? 'on-confirm';
      const spec: SourceSpec = {
        queue: d['src-queue'],
        queueArgs: d['src-queue-args'],
        exchange: d['src-exchange'],
        exchangeKey: d['src-exchange-key'] ?? '#',
        consumerArgs: this.#consumerArgs(),
        prefetch: d['src-prefetch-count'] ?? DEFAULT_PREFETCH,
        noAck: ackMode === 'no-ack',
      };
      const broker = this.#host.broker;
      const source = isLocal(this.#sourceUri, broker.vhost)
        ? await localSource(broker, spec)
        : await remoteSource(this.#sourceUri, this.#name, spec, fail);
      this.#source = source;
      this.#pending = () => source.pending();
      if (attempt !== this.#attempt) return void (await this.#closeEnds());
      const destinationSpec = {
        queue: d['dest-queue'],
        queueArgs: d['dest-queue-args'],
        confirm: ackMode === 'on-confirm',
      };
      this.#destination = isLocal(this.#destinationUri, broker.vhost)
        ? await localDestination(broker, destinationSpec)
        : await remoteDestination(this.#destinationUri, this.#name, destinationSpec, fail);
      if (attempt !== this.#attempt) return void (await this.#closeEnds());
      if (d['src-delete-after'] === 'queue-length' && this.#limit === undefined) {
        this.#limit = source.pending() ?? 0;
      }
      this.#setState('running');
      if (this.#limit !== undefined && this.#forwarded >= this.#limit) return this.#finish(attempt);
      const forward = forwarder(
        this.#name,
        broker.vhost,
        d,
        this.#sourceUri,
        this.#destinationUri,
        () => this.#host.clock.now(),
      );
      await source.consume((delivery) => this.#forward(attempt, delivery, forward));
    } catch (error) {
      this.#fail(attempt, error);
    }
  }

  #forward(attempt: number, delivery: Delivery, forward: ReturnType<typeof forwarder>): void {
    const source = this.#source!;
    const destination = this.#destination!;
    if (attempt !== this.#attempt) return;
    const d = this.#definition;
    // Past the count to move: give it back (it stays in the queue, as with RabbitMQ).
    if (this.#limit !== undefined && this.#forwarded + this.#inFlight >= this.#limit) {
      source.requeue(delivery.tag).catch((error) => this.#fail(attempt, error));
      return;
    }
    this.#inFlight++;
    this.#published++;
    const exchange = d['dest-exchange'] ?? '';
    const routingKey = d['dest-queue'] ?? d['dest-exchange-key'] ?? delivery.routingKey;
    const noAck = d['ack-mode'] === 'no-ack';
    if (!noAck) this.#unacked.set(delivery.tag, false);
    if (delivery.offset !== undefined) this.#offsets.set(delivery.tag, delivery.offset);
    destination
      .publish(exchange, routingKey, delivery.body, forward(delivery.properties))
      .then((taken) => {
        if (attempt !== this.#attempt) return;
        if (noAck) {
          this.#passed(delivery.tag);
          return this.#counted(attempt, 1);
        }
        if (taken) this.#unacked.set(delivery.tag, true);
        else this.#refused(attempt, delivery.tag);
        if (this.#flushing) return;
        this.#flushing = true;
        // Confirms that arrive together resolve in the same turn: one ack settles them all.
        queueMicrotask(() => this.#ackSettled());
      })
      .catch((error) => this.#fail(attempt, error));
  }

  /**
   * Acknowledges, with one `multiple` ack, the run of deliveries at the head of those in flight
   * whose publish is settled (confirmed, or sent under `on-publish`). A delivery whose publish is
   * not settled holds back every later one, so no ack ever covers a message before its own confirm.
   */
  #ackSettled(): void {
    this.#flushing = false;
    const attempt = this.#attempt;
    const source = this.#source;
    let last: number | undefined;
    let count = 0;
    for (const [tag, settled] of this.#unacked) {
      if (!settled) break;
      this.#unacked.delete(tag);
      last = tag;
      count++;
    }
    if (last === undefined || source === undefined) return;
    const acked = last;
    source
      .ack(acked, count > 1)
      .then(() => {
        if (attempt !== this.#attempt) return;
        this.#passed(acked);
        this.#counted(attempt, count);
      })
      .catch((error) => this.#fail(attempt, error));
  }

  /**
   * The destination refused a message (a `basic.nack`): as RabbitMQ's shovel does, it is nacked
   * at the source with `requeue`, so it goes back to the source queue (and comes round again),
   * and the shovel keeps running. It no longer holds back the acks of later messages.
   */
  #refused(attempt: number, tag: number): void {
    this.#unacked.delete(tag);
    this.#offsets.delete(tag);
    this.#inFlight--;
    this.#source!.requeue(tag).catch((error) => this.#fail(attempt, error));
  }

  /**
   * The source is done with `tag` and every delivery before it: for a stream, the shovel stores
   * the offset after it, where it resumes after a restart (of the shovel or of the broker).
   */
  #passed(tag: number): void {
    if (this.#offsets.size === 0) return;
    let offset: number | undefined;
    for (const [earlier, at] of this.#offsets) {
      if (earlier > tag) break;
      this.#offsets.delete(earlier);
      offset = at;
    }
    if (offset !== undefined) this.#host.savePosition(this.#name, offset + 1);
  }

  /**
   * `src-consumer-args`, with the stored position in a stream as its `x-stream-offset`: a
   * restarted shovel neither sends the stream again nor skips what it had not passed on.
   */
  #consumerArgs(): Readonly<Record<string, unknown>> | undefined {
    const args = this.#definition['src-consumer-args'];
    const position = this.#host.position(this.#name);
    return position === undefined ? args : { ...args, [OFFSET_HEADER]: position };
  }

  /** Counts `count` messages moved; at the count to move, the shovel is done. */
  #counted(attempt: number, count: number): void {
    if (attempt !== this.#attempt) return;
    this.#inFlight -= count;
    this.#forwarded += count;
    if (this.#limit !== undefined && this.#forwarded >= this.#limit) this.#finish(attempt);
  }

  #fail(attempt: number, error: unknown): void {
    if (attempt !== this.#attempt || this.#stopped) return;
    this.#attempt++;
    // What the destination held was never sent.
    this.#published -= this.#destination?.held() ?? 0;
    this.#inFlight = 0;
    this.#unacked.clear();
    this.#reason = this.#masked(error);
    this.#setState('terminated');
    void this.#closeEnds();
    const delay = this.#definition['reconnect-delay'] ?? DEFAULT_RECONNECT_DELAY;
    // As in RabbitMQ, a delay of 0 means no restart.
    if (delay > 0) {
      this.#timer = this.#host.clock.setTimeout(() => {
        this.#timer = undefined;
        if (!this.#stopped) void this.#run();
      }, delay * 1000);
    }
  }

  #finish(attempt: number): void {
    if (attempt !== this.#attempt || this.#stopped) return;
    this.#stopped = true;
    this.#attempt++;
    this.#setState('terminated');
    void this.#closeEnds().then(() => {
      publish({ name: this.#name, vhost: this.#host.broker.vhost, state: 'deleted' });
      this.#onDeleted();
      this.#host.finished(this.#name);
    });
  }

  async #closeEnds(): Promise<void> {
    const source = this.#source;
    const destination = this.#destination;
    this.#source = undefined;
    this.#destination = undefined;
    await source?.close().catch(() => {});
    await destination?.close().catch(() => {});
  }

  #setState(state: ShovelState): void {
    if (state !== 'terminated') this.#reason = undefined;
    this.#state = state;
    this.#since = this.#host.clock.now();
    const event: ShovelEvent = { name: this.#name, vhost: this.#host.broker.vhost, state };
    publish(this.#reason === undefined ? event : { ...event, reason: this.#reason });
  }

  /** The error's message with every password of the shovel's URIs masked. */
  #masked(error: unknown): string {
    let message = error instanceof Error ? error.message : String(error);
    for (const uri of [this.#definition['src-uri'], this.#definition['dest-uri']].flat()) {
      const password = passwordOf(uri);
      if (password) message = message.split(password).join('***');
      message = message.split(uri).join(maskUri(uri));
    }
    return message;
  }
}

function publish(event: ShovelEvent): void {
  if (shovelChannel.hasSubscribers) shovelChannel.publish(event);
}

/** One URI of a list: a new one chosen at random at each attempt, as RabbitMQ's shovel does. */
function pick(uris: string | readonly string[]): string {
  return typeof uris === 'string' ? uris : uris[Math.floor(Math.random() * uris.length)]!;
}

/**
 * Whether a URI names the broker the shovel runs in: no host, as RabbitMQ reads `amqp://` (its
 * own node). A vhost in the path must be this broker's.
 */
function isLocal(uri: string, vhost: string): boolean {
  const url = new URL(uri);
  if (url.hostname !== '') return false;
  const named = decodeURIComponent(url.pathname.slice(1)) || vhost;
  if (named !== vhost)
    throw new Error(`no vhost '${named}' in this broker (its vhost is '${vhost}')`);
  return true;
}

function passwordOf(uri: string): string {
  try {
    return decodeURIComponent(new URL(uri).password);
  } catch {
    return '';
  }
}
