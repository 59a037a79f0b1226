/**
 * The hand-over of a single-active-consumer queue. When the active consumer goes (cancelled, or
 * closed with its connection), the next one becomes active only once every message the one that
 * went still holds is settled or returned: it never receives a message that stood behind those,
 * and receives the returned ones first, as on RabbitMQ.
 */
import type { Subscription } from '../consumer.js';

export class ActiveHandover {
  /** The consumer that went while holding unacknowledged messages. */
  #from: Subscription<number> | undefined;
  /** Delivers again: called once the hand-over is done. */
  readonly #resume: () => void;

  constructor(resume: () => void) {
    this.#resume = resume;
  }

  /** Whether the next active consumer waits for the one that went. */
  get waiting(): boolean {
    return this.#from !== undefined;
  }

  /** The active consumer went. */
  left(consumer: Subscription<number>): void {
    if (this.#from === undefined && consumer.unackedCount > 0) this.#from = consumer;
    else this.#done();
  }

  /** `consumer` settled (or returned) a message. */
  settled(consumer: Subscription<number>): void {
    if (consumer !== this.#from || consumer.unackedCount > 0) return;
    this.#from = undefined;
    this.#done();
  }

  /**
   * Deliveries resume after the synchronous step that ended the hand-over: a closing consumer
   * returns all its messages in one step, and each is back in place before the next one is
   * served.
   */
  #done(): void {
    queueMicrotask(this.#resume);
  }
}
