/**
 * The transaction of a channel in tx mode: the publishes and acknowledgements it holds until
 * tx.commit runs them in order (or tx.rollback forgets them).
 */
import { AmqpException } from './errors.js';

/**
 * What one transaction may hold until its commit: RabbitMQ sets no bound (memory alarms stop the
 * publisher); past either, the channel closes with 406 and the transaction is discarded.
 */
export const TX_MAX_ACTIONS = 65_536;
export const TX_MAX_BYTES = 128 * 1024 * 1024;

/** A publish or an acknowledgement held for the commit. */
type Action = () => void | Promise<void>;

export class Transaction {
  #actions: Action[] = [];
  /** Body bytes of the publishes held. */
  #bytes = 0;

  /**
   * Keeps `action` (of `bytes` body bytes) for the commit.
   * @throws AmqpException 406 when the transaction would hold more than its bounds.
   */
  hold(action: Action, bytes: number): void {
    if (this.#actions.length >= TX_MAX_ACTIONS || this.#bytes + bytes > TX_MAX_BYTES) {
      throw new AmqpException(
        406,
        `transaction holds more than ${TX_MAX_ACTIONS} publishes and acknowledgements or ${TX_MAX_BYTES} bytes; commit more often`,
      );
    }
    this.#actions.push(action);
    this.#bytes += bytes;
  }

  /** Runs what it holds, in order, each awaited; what comes meanwhile is the next one's. */
  async commit(): Promise<void> {
    const actions = this.#actions;
    this.rollback();
    for (const action of actions) await action();
  }

  /** Forgets what it holds. */
  rollback(): void {
    this.#actions = [];
    this.#bytes = 0;
  }
}
