/**
 * Browsers of a last-value queue, like the Qpid broker's browse-only consumers: they see the
 * queue's current values and remove nothing, need no acks and hold nothing back from destructive
 * consumers. A new browser first gets the latest value of every key (and every keyless message)
 * in queue order, then each new value as it is published; a value replaced before the browser
 * reached it is never shown to it.
 *
 * A browser is a position in the store's log, so a slow browser costs no buffer: it reads what
 * is current when it gets there.
 */

import { Message, type Settlement } from '../../message/message.js';
import { generateConsumerTag } from '../consumer.js';
import type { CurrentValues } from './conflating-store.js';

/** A browse callback. A returned promise is awaited before the next message is passed. */
export type BrowseCallback = (message: Message) => void | Promise<void>;

const resolved = Promise.resolve();

/**
 * One browser: run with a callback, or iterated with `for await`. Messages it passes have
 * delivery tag 0 and `ack`/`nack`/`reject` do nothing (there is nothing to settle);
 * `message.cancelConsumer()` cancels the browser.
 */
export class Browser implements Settlement, AsyncIterable<Message> {
  /** The browser's consumer tag (`amq.ctag-…`). */
  readonly consumerTag: string;

  readonly #values: CurrentValues;
  readonly #callback: BrowseCallback | undefined;
  readonly #onCancel: (browser: Browser) => void;
  readonly #onError: (browser: Browser, error: unknown) => void;
  #cancelled = false;
  /** A callback's promise is pending, or a pump is already running. */
  #busy = false;
  #waiter: ((result: IteratorResult<Message>) => void) | undefined;

  /** @internal Made by the queue's `browse()`. */
  constructor(
    values: CurrentValues,
    callback: BrowseCallback | undefined,
    onCancel: (browser: Browser) => void,
    onError: (browser: Browser, error: unknown) => void,
  ) {
    this.consumerTag = generateConsumerTag();
    this.#values = values;
    this.#callback = callback;
    this.#onCancel = onCancel;
    this.#onError = onError;
  }

  /** True until `cancel()`. */
  get active(): boolean {
    return !this.#cancelled;
  }

  /** @internal New values may be there: pass them on. */
  wake(): void {
    if (this.#cancelled) return;
    if (this.#callback) this.#pump();
    else if (this.#waiter && this.#values.next()) {
      const resolve = this.#waiter;
      this.#waiter = undefined;
      resolve({ done: false, value: this.#message() });
    }
  }

  /** Stops the browser; an iterating loop ends. Idempotent. */
  cancel(): Promise<void> {
    if (this.#cancelled) return resolved;
    this.#cancelled = true;
    this.#onCancel(this);
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.({ done: true, value: undefined });
    return resolved;
  }

  /** Same as `cancel()`: a browser holds nothing to give back. */
  close(): Promise<void> {
    return this.cancel();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.cancel();
  }

  /** Browsed messages need no acknowledgement: this does nothing. */
  ack(): Promise<void> {
    return resolved;
  }

  /** Browsed messages are not settled: this does nothing. */
  nack(): Promise<void> {
    return resolved;
  }

  /** Iterates the values of a browser made without a callback; leaving the loop cancels it. */
  [Symbol.asyncIterator](): AsyncIterator<Message> {
    if (this.#callback) throw new TypeError('a browser with a callback cannot also be iterated');
    return {
      next: () => this.#next(),
      return: async () => {
        await this.cancel();
        return { done: true, value: undefined };
      },
    };
  }

  #next(): Promise<IteratorResult<Message>> {
    if (this.#cancelled) return Promise.resolve({ done: true, value: undefined });
    if (this.#values.next()) return Promise.resolve({ done: false, value: this.#message() });
    return new Promise((resolve) => {
      this.#waiter = resolve;
    });
  }

  /** Passes values to the callback until it is caught up, pausing while a promise is pending. */
  #pump(): void {
    if (this.#busy) return;
    this.#busy = true;
    const callback = this.#callback!;
    while (!this.#cancelled && this.#values.next()) {
      let result: void | Promise<void>;
      try {
        result = callback(this.#message());
      } catch (error) {
        this.#onError(this, error); // nothing to requeue: the browser moves on
        continue;
      }
      if (result) {
        result.then(this.#resume, this.#failed);
        return;
      }
    }
    this.#busy = false;
  }

  readonly #resume = (): void => {
    this.#busy = false;
    this.#pump();
  };

  readonly #failed = (error: unknown): void => {
    this.#onError(this, error);
    this.#resume();
  };

  #message(): Message {
    return new Message(this.#values.message, 0, this.consumerTag, false, this);
  }
}

/**
 * The browsers of one queue. `wake()` is called on every publish and costs a flag check: the
 * browsers are woken once, in a microtask, after the publishing code has run.
 */
export class BrowserSet {
  readonly #browsers = new Set<Browser>();
  readonly #onOpen: () => void;
  readonly #onClose: () => void;
  readonly #onError: (browser: Browser, error: unknown) => void;
  #scheduled = false;

  /**
   * `onOpen`/`onClose` run as each browser starts and ends (the queue counts them); `onError`
   * when a browser's callback throws or its promise rejects.
   */
  constructor(
    onOpen: () => void,
    onClose: () => void,
    onError: (browser: Browser, error: unknown) => void,
  ) {
    this.#onOpen = onOpen;
    this.#onClose = onClose;
    this.#onError = onError;
  }

  /** Browsers open now. */
  get size(): number {
    return this.#browsers.size;
  }

  /** Registers a browser over `values` and starts it (a callback browser runs at once). */
  open(values: CurrentValues, callback: BrowseCallback | undefined): Browser {
    const browser = new Browser(
      values,
      callback,
      (b) => {
        if (this.#browsers.delete(b)) this.#onClose();
      },
      this.#onError,
    );
    this.#browsers.add(browser);
    this.#onOpen();
    if (callback) queueMicrotask(() => browser.wake());
    return browser;
  }

  /** New values were added: wake every browser once the current code has run. */
  readonly wake = (): void => {
    if (this.#scheduled || this.#browsers.size === 0) return;
    this.#scheduled = true;
    queueMicrotask(this.#wakeAll);
  };

  /** Cancels every browser (the queue closed or was deleted). */
  async cancelAll(): Promise<void> {
    for (const browser of [...this.#browsers]) await browser.cancel();
  }

  readonly #wakeAll = (): void => {
    this.#scheduled = false;
    for (const browser of this.#browsers) browser.wake();
  };
}
