/**
 * Publisher confirms of one channel. Publishes are numbered from 1; each settles when the broker
 * stored it (under the storage's fsync policy), or once routed when it asks for no durability, or
 * when refused. Settlements are sent in sequence order, a run of acks coalesced into one
 * `basic.ack` with `multiple`, as RabbitMQ coalesces them; a refused publish is a `basic.nack` of
 * its own. A settled confirm goes out before any delivery its connection writes after it
 * (`DueConfirms`): RabbitMQ confirms a message before the consumer it reaches receives it.
 */
export type ConfirmSender = (kind: 'ack' | 'nack', deliveryTag: number, multiple: boolean) => void;

/** The confirms of a connection's channels that are settled and not yet sent. */
export class DueConfirms {
  readonly #due = new Set<Confirms>();

  /** Whether some are due: deliveries then send them first. */
  get pending(): boolean {
    return this.#due.size > 0;
  }

  add(confirms: Confirms): void {
    this.#due.add(confirms);
  }

  delete(confirms: Confirms): void {
    this.#due.delete(confirms);
  }

  /** Sends every due confirm now. */
  flush(): void {
    for (const confirms of [...this.#due]) confirms.flush();
  }
}

export class Confirms {
  #next = 1;
  /** Every sequence number up to this one was sent. */
  #sent = 0;
  /**
   * Every sequence number up to this one was acked (sent or not). Publishes settle in order
   * as a rule, and these need no entry in `#settled`.
   */
  #acked = 0;
  /** Settled out of order, not yet sent: sequence number → acked. */
  readonly #settled = new Map<number, boolean>();
  #flushing = false;
  readonly #send: ConfirmSender;
  readonly #due: DueConfirms | undefined;

  constructor(send: ConfirmSender, due?: DueConfirms) {
    this.#send = send;
    this.#due = due;
  }

  /** Numbers the next publish. */
  take(): number {
    return this.#next++;
  }

  /** Publishes numbered and not yet confirmed. */
  get outstanding(): number {
    return this.#next - 1 - this.#sent;
  }

  /** Records the outcome of publish `seq`; sends once the ones before it are settled too. */
  settle(seq: number, acked: boolean): void {
    if (acked && seq === this.#acked + 1) this.#acked = seq;
    else this.#settled.set(seq, acked);
    if (this.#flushing) return;
    this.#flushing = true;
    this.#due?.add(this);
    // Outcomes settled in the same turn go out as one run.
    queueMicrotask(() => this.flush());
  }

  /** Sends what is settled (at the end of the turn, or before a delivery). */
  flush(): void {
    if (!this.#flushing) return;
    this.#flushing = false;
    this.#due?.delete(this);
    const settled = this.#settled;
    for (;;) {
      // The acks in order, then what was settled out of order after them.
      for (let acked = settled.get(this.#acked + 1); acked; acked = settled.get(this.#acked + 1)) {
        settled.delete(++this.#acked);
      }
      if (this.#acked > this.#sent) {
        this.#send('ack', this.#acked, this.#acked > this.#sent + 1);
        this.#sent = this.#acked;
      }
      const seq = this.#sent + 1;
      if (settled.get(seq) !== false) return;
      settled.delete(seq);
      this.#sent = this.#acked = seq;
      this.#send('nack', seq, false);
    }
  }
}
