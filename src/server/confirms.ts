/**
 * Publisher confirms of one channel. Publishes are numbered from 1; each settles when the broker
 * stored it (under the storage's fsync policy) or refused it. Settlements are sent in sequence
 * order, a run of acks coalesced into one `basic.ack` with `multiple`, as RabbitMQ coalesces
 * them; a refused publish is a `basic.nack` of its own.
 */
export type ConfirmSender = (kind: 'ack' | 'nack', deliveryTag: number, multiple: boolean) => void;

export class Confirms {
  #next = 1;
  /** Every sequence number up to this one was sent. */
  #sent = 0;
  /** Settled, not yet sent: sequence number → acked. */
  readonly #settled = new Map<number, boolean>();
  #flushing = false;
  readonly #send: ConfirmSender;

  constructor(send: ConfirmSender) {
    this.#send = send;
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
    this.#settled.set(seq, acked);
    if (this.#flushing) return;
    this.#flushing = true;
    // Outcomes settled in the same turn go out as one run.
    queueMicrotask(() => this.#flush());
  }

  #flush(): void {
    this.#flushing = false;
    let runEnd = 0;
    let runStart = 0;
    for (;;) {
      const seq = this.#sent + 1;
      const acked = this.#settled.get(seq);
      if (acked === undefined) break;
      this.#settled.delete(seq);
      this.#sent = seq;
      if (acked) {
        if (runEnd === 0) runStart = seq;
        runEnd = seq;
        continue;
      }
      if (runEnd !== 0) this.#send('ack', runEnd, runEnd > runStart);
      runEnd = 0;
      this.#send('nack', seq, false);
    }
    if (runEnd !== 0) this.#send('ack', runEnd, runEnd > runStart);
  }
}
