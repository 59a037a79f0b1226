/**
 * The last-value queue: a classic queue whose store keeps only the latest message of each key.
 */
import { ClosedError, inequivalentArg, invalidArg, queueResource } from '../../errors.js';
import { messageCodec } from '../../message/codec.js';
import { Message, type Settlement } from '../../message/message.js';
import type { FieldValue } from '../../message/types.js';
import {
  type ClassicQueueInit,
  type ClassicQueueOptions,
  checkClassicOptionKeys,
  classicInit,
  openClassicNamespace,
} from '../classic/classic-options.js';
import { ClassicQueue } from '../classic/classic-queue.js';
import { LVQ_ARGUMENT, LVQ_ARGUMENTS, LVQ_KEY_ARGUMENT, parseLvqDeclaration } from './arguments.js';
import { type BrowseCallback, type Browser, BrowserSet } from './browse.js';
import { ConflatingStore, LVQ_LOG } from './conflating-store.js';
import { lvqKey } from './key.js';

/** Options of `LastValueQueue.open()`. */
export interface LastValueQueueOptions extends ClassicQueueOptions {
  /**
   * Header holding a message's key (sugar for the `qpid.last_value_queue_key` argument; giving
   * both with different values is a TypeError). Default `qpid.LVQ_key`.
   */
  readonly key?: string;
}

/** Metadata key of the key header a queue was declared with: it never changes afterwards. */
const KEY_META = 'lvq.key';

const resolved = Promise.resolve();
/** Settlement of messages read by `latest()` and `values()`: there is nothing to settle. */
const READ_ONLY: Settlement = {
  ack: () => resolved,
  nack: () => resolved,
  cancel: () => resolved,
};

/**
 * A queue in which a newer message replaces the older one with the same key (the value of the
 * key header): a consumer joining a queue of stock prices gets the latest quote of each stock,
 * then each new quote as it comes. Follows the Qpid Java broker's last-value queue.
 *
 * - A published message goes to the tail; a ready older value of its key is removed, so
 *   replacing a key moves it to the tail (publishing keys 1 2 3 4 2 1 leaves 3 4 2 1).
 * - Keys compare by type and value: "3" and 3 differ; tables and arrays compare by their
 *   stable JSON rendering. A message without the key header (or with `null`) is an ordinary
 *   FIFO entry, never replaced and never replacing.
 * - A value delivered and not yet acked is not replaced; if it is released (nack with requeue,
 *   consumer closed) after a newer value arrived, it is discarded, never redelivered.
 * - Prefetch decides how much conflation a consumer sees: what is already in its prefetch
 *   window is delivered even if newer values arrive. Use `prefetch: 1` for exact last-value
 *   semantics.
 * - `browse()` reads the current values without consuming them; `latest(key)` and `values()`
 *   read them without a consumer, as a latest-value cache. An open browser keeps `x-expires`
 *   from deleting the queue, as any consumer does in Qpid, but is counted apart from the
 *   consumers (`browserCount`, `stats().browsers`).
 * - Every classic-queue argument applies (TTL, length limits with drop-head, dead-lettering,
 *   single active consumer, ...) except `x-max-priority`, which is ignored: an LVQ has no
 *   priorities, as in the Qpid Java broker.
 *
 * ```ts
 * const prices = await LastValueQueue.open({ name: 'prices', key: 'symbol' });
 * await prices.publish({ bid: 101 }, { headers: { symbol: 'ACME' } });
 * await prices.publish({ bid: 102 }, { headers: { symbol: 'ACME' } });
 * prices.messageCount; // 1
 * prices.latest('ACME')?.json(); // { bid: 102 }
 * ```
 */
export class LastValueQueue extends ClassicQueue {
  /** Name of the header holding a message's key. */
  readonly key: string;
  readonly #store: ConflatingStore;
  readonly #browsers = new BrowserSet(
    () => this.browserOpened(),
    () => this.browserClosed(),
    (browser, error) => this.reportError(error, 'browser', browser.consumerTag),
  );

  private constructor(init: ClassicQueueInit, store: ConflatingStore) {
    super(init);
    this.#store = store;
    this.key = store.keyHeader;
    store.onAdd = this.#browsers.wake;
  }

  /**
   * Opens (or creates) a last-value queue. The key header comes from `key`, the
   * `qpid.last_value_queue_key` argument, or defaults to `qpid.LVQ_key`. A queue that exists in
   * the storage keeps its messages, key and arguments: another key or other arguments fail with
   * 406, and so does opening a queue that was declared as another kind.
   *
   * @throws PreconditionFailedError (406) for an invalid or inequivalent argument.
   */
  static async open(options: LastValueQueueOptions): Promise<LastValueQueue> {
    checkClassicOptionKeys(options, 'LastValueQueue', ['key']);
    const args = options.arguments ?? {};
    if (typeof args !== 'object' || args === null) {
      throw new TypeError('queue arguments must be an object');
    }
    const sugar = options.key;
    if (sugar !== undefined) {
      if (typeof sugar !== 'string') throw new TypeError('LastValueQueue key must be a string');
      const given = args[LVQ_KEY_ARGUMENT];
      if (given !== undefined && given !== sugar) {
        throw new TypeError(`key '${sugar}' differs from ${LVQ_KEY_ARGUMENT} '${String(given)}'`);
      }
    }
    const declaration = parseLvqDeclaration(
      {
        [LVQ_ARGUMENT]: true,
        ...args,
        ...(sugar !== undefined && { [LVQ_KEY_ARGUMENT]: sugar }),
      },
      queueResource(options),
    );
    if (declaration === undefined) {
      throw invalidArg(
        LVQ_ARGUMENT,
        queueResource(options),
        'a LastValueQueue cannot be declared with false',
      );
    }
    const opened = await openClassicNamespace(options, declaration.classic, LVQ_ARGUMENTS);
    try {
      const meta = opened.namespace.meta;
      const stored = meta.get(KEY_META);
      if (stored === undefined) {
        const logs = await opened.namespace.listLogs();
        if (logs.some((name) => name !== LVQ_LOG)) {
          throw inequivalentArg(LVQ_ARGUMENT, queueResource(options));
        }
        meta.set(KEY_META, declaration.key);
      } else if (stored !== declaration.key) {
        throw inequivalentArg(LVQ_KEY_ARGUMENT, queueResource(options));
      }
      const store = await ConflatingStore.open(opened.namespace, {
        key: declaration.key,
        codec: messageCodec,
        persistent: opened.storage.supports.persistent,
      });
      return new LastValueQueue(classicInit(options, opened, store), store);
    } catch (error) {
      if (opened.ownsStorage) await opened.storage.close();
      throw error;
    }
  }

  /** Live keys: keys whose latest value is ready or delivered and not yet acked. */
  get keyCount(): number {
    return this.#store.keyCount;
  }

  /**
   * Starts a browser: it gets the current value of every key (and every keyless message) in
   * queue order, then each new value as it is published, without removing anything or needing
   * acks. With a callback the browser runs until cancelled (a returned promise is awaited before
   * the next message); without one it is an async iterator, cancelled by leaving the loop.
   *
   * ```ts
   * for await (const quote of prices.browse()) console.log(quote.json());
   * ```
   */
  browse(callback?: BrowseCallback): Browser {
    this.#assertOpen();
    if (callback !== undefined && typeof callback !== 'function') {
      throw new TypeError('browse() callback must be a function');
    }
    return this.#browsers.open(this.#store.current(), callback);
  }

  /** Browsers open on the queue (not counted in `consumerCount`; see `stats().browsers`). */
  get browserCount(): number {
    return this.#browsers.size;
  }

  /**
   * The latest message of a key, ready or delivered and not yet acked, or undefined. Reading it
   * consumes nothing; `ack`/`nack` on it do nothing.
   */
  latest(key: FieldValue): Message | undefined {
    this.#assertOpen();
    const k = lvqKey(key);
    const stored = k === undefined ? undefined : this.#store.latest(k);
    return stored === undefined ? undefined : new Message(stored, 0, '', false, READ_ONLY);
  }

  /**
   * The current values in queue order (the latest of every key and every keyless message),
   * read without a consumer; `ack`/`nack` on them do nothing. Values published while iterating
   * are included; values replaced before the iteration reached them are not.
   */
  *values(): IterableIterator<Message> {
    this.#assertOpen();
    const current = this.#store.current();
    while (current.next()) yield new Message(current.message, 0, '', false, READ_ONLY);
  }

  /** Cancels the browsers, then closes the queue as `ClassicQueue.close()` does. */
  override async close(): Promise<void> {
    await this.#browsers.cancelAll();
    await super.close();
  }

  /** Cancels the browsers, then deletes the queue as `ClassicQueue.delete()` does. */
  override async delete(): Promise<number> {
    this.#assertOpen();
    await this.#browsers.cancelAll();
    return super.delete();
  }

  #assertOpen(): void {
    if (this.closed) throw new ClosedError(`queue '${this.name}' is closed`);
  }
}
