/**
 * Runs one operation sequence on a reference broker and on mqlite's sides in lockstep and
 * compares what a client observes after every operation (its result, every queue's counts, the
 * deliveries each consumer got) and, at the end, the contents of every queue and of the
 * dead-letter queue. After every operation it also checks mqlite's invariants (see `Side`) and
 * that the process saw no unhandled rejection or uncaught exception.
 *
 * A real broker works asynchronously (deliveries, dead-lettering), so after each operation all
 * sides are observed again until they agree or a deadline passes: agreement is seen as soon as it
 * holds, and only a real difference waits for the deadline.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Driver } from './driver.js';
import { normaliseOperation } from './normalise.js';
import type { Operation, Sequence } from './operations.js';
import type { Side } from './side.js';
import { Timeline } from './timeline.js';

/**
 * How long the sides may take to agree after an operation: generous for a broker on a loaded
 * machine, short enough that shrinking a real difference (which waits it out each time) ends.
 */
const AGREE_MS = 5000;
/** How long one action may take before the side counts as stuck (a hang is a difference). */
const STUCK_MS = 15_000;
/** TTLs shorter than this race the run's real time; longer ones never expire during it. */
const SHORT_TTL_MS = 60_000;

/** Both traces, and whether they agree. */
export interface Comparison {
  readonly same: boolean;
  /** Why a difference may be a race of real time against a TTL, when it may. */
  readonly raced: string | undefined;
  /**
   * Where a dead letter's fate turned on the documented `x-death` order (see death-order.ts),
   * when the sides differed after that and mqlite's sides agreed with each other. Neither this
   * nor `raced` is given when an invariant broke or a side hung.
   */
  readonly deathOrder: string | undefined;
  /**
   * Where the sides differed only by the documented order of a quorum queue's drop-head dead
   * letters (see drop-order.ts): the DLQ as mqlite filled it. Not given with `raced`.
   */
  readonly dropOrder: string | undefined;
  readonly report: string;
}

/** The reference driver and mqlite's, moved together through one sequence. */
class Lockstep {
  readonly timeline = new Timeline();
  readonly reference: Driver;
  readonly subjects: readonly Driver[];
  /** Unhandled rejections and uncaught exceptions the process saw during the run. */
  readonly processErrors: string[] = [];
  /** An invariant broke or a side hung: no documented difference accounts for that. */
  broken = false;
  /** The DLQ as mqlite filled it, when the drain differed only by the drop-head order. */
  dropOrder: string | undefined;
  #reported = new Map<Driver, number>();
  /** When the reference's part of the last step began and ended. */
  #window = { start: 0, end: 0 };

  constructor(reference: Driver, subjects: readonly Driver[]) {
    this.reference = reference;
    this.subjects = subjects;
  }

  get all(): readonly Driver[] {
    return [this.reference, ...this.subjects];
  }

  /** Does `action` on the reference, then on every subject at the same point of its clock. */
  async step<T>(what: string, action: (driver: Driver) => Promise<T>): Promise<T[]> {
    const start = await this.timeline.clear();
    const results = [await settles(what, this.reference, action)];
    this.#window = { start, end: this.timeline.elapsed() };
    this.timeline.ended(start, what);
    for (const subject of this.subjects) {
      const { side } = subject;
      if (side.advanceTo) {
        side.advanceTo(start);
        // What the clock set off (an expiry's dead-lettering) has long finished on the broker.
        await side.quiesce();
      }
      results.push(await settles(what, subject, action));
    }
    return results;
  }

  /** Observes every side until they agree or the deadline passes. */
  async agreed(): Promise<string[]> {
    const end = Date.now() + AGREE_MS;
    for (;;) {
      const seen = await this.step('an observation', (d) => d.observe());
      if (seen.every((s) => s === seen[0]) || Date.now() > end) {
        for (const d of this.all) d.commit();
        return seen;
      }
    }
  }

  /** Runs `operation` on every side; records each side's line; says whether they agree. */
  async run(label: string, operation: Operation, publishNumber: number): Promise<boolean> {
    const results = await this.step(label, (d) => d.run(operation, publishNumber));
    if (operation.op === 'wait') await sleep(operation.ms);
    if (operation.op === 'publish') {
      this.#expires(operation.queue, operation.expiration);
      // A burst the broker took longer to take than its TTL saw its first messages expire.
      this.timeline.ended(this.#window.start, label, this.#window.end);
    }
    const seen = await this.agreed();
    for (const [i, d] of this.all.entries()) d.trace.push(`${label} → ${results[i]} | ${seen[i]}`);
    return this.#checked(
      results.every((r) => r === results[0]) && seen.every((s) => s === seen[0]),
    );
  }

  /** A publish's deadline, if its TTL is short. */
  #expires(queue: number, expiration: string | undefined): void {
    const spec = this.reference.specs[queue]!;
    const ttls = [spec.messageTtl, expiration ?? spec.expiration].filter((t) => t !== undefined);
    const ttl = Math.min(...ttls.map(Number));
    if (ttl > 0 && ttl < SHORT_TTL_MS) {
      this.timeline.expires(this.#window.start, this.#window.end, ttl);
    }
  }

  /** Whether the sides agree and kept their invariants; a broken one is traced where it broke. */
  #checked(agree: boolean): boolean {
    let kept = this.processErrors.length === 0;
    for (const d of this.subjects) {
      const violations = d.side.violations?.() ?? [];
      const fresh = violations.slice(this.#reported.get(d) ?? 0);
      this.#reported.set(d, violations.length);
      if (fresh.length > 0) d.trace.push(...fresh.map((v) => `  invariant broken: ${v}`));
      kept &&= fresh.length === 0;
    }
    if (this.processErrors.length > 0) {
      this.reference.trace.push(...this.processErrors.map((e) => `  process: ${e}`));
      this.processErrors.length = 0;
    }
    if (!kept) this.broken = true;
    return agree && kept;
  }

  /** Every consumer goes, then what every queue holds is drained and compared. */
  async finish(deleted: ReadonlySet<number>): Promise<boolean> {
    // One by one as an operation, so a hand-over between consumers is observed.
    while (this.reference.consumers.some((c) => c.open)) {
      const close: Operation = { op: 'close', consumer: 0 };
      if (!(await this.run(`end ${JSON.stringify(close)}`, close, 0))) return false;
    }
    const seen = await this.agreed();
    const drained = await this.step('the drain', (d) => d.drain(deleted));
    for (const [i, d] of this.all.entries()) {
      d.trace.push(`end: ${seen[i]} | ${drained[i]!.text}`);
      d.trace.push(...drained[i]!.violations.map((v) => `  invariant broken: ${v}`));
    }
    const agree =
      seen.every((s) => s === seen[0]) && drained.every((x) => x.text === drained[0]!.text);
    const kept = drained.every((x) => x.violations.length === 0);
    if (!kept) this.broken = true;
    const [reference, ...subjects] = drained;
    if (
      kept &&
      !agree &&
      seen.every((s) => s === seen[0]) &&
      subjects.every((x) => x.text === subjects[0]!.text && x.as310 === reference!.text)
    ) {
      this.dropOrder = subjects[0]!.text.slice(subjects[0]!.text.indexOf('dlq['));
    }
    return this.#checked(agree && kept);
  }
}

/** A side that did not finish an action in `STUCK_MS`. */
class Stuck extends Error {
  override name = 'Stuck';
  readonly driver: Driver;

  constructor(driver: Driver, what: string) {
    super(`${what} did not finish in ${STUCK_MS} ms`);
    this.driver = driver;
  }
}

/** `action` on `driver`, or a `Stuck` error when it hangs. */
async function settles<T>(
  what: string,
  driver: Driver,
  action: (driver: Driver) => Promise<T>,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Stuck(driver, what)), STUCK_MS);
  });
  try {
    return await Promise.race([action(driver), stuck]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `sequence` on `reference` (the broker mqlite follows) and on each of `subjects` (mqlite's
 * sides), opened fresh for it, in lockstep; stops at the first difference.
 */
export async function compareOn(
  sequence: Sequence,
  reference: () => Promise<Side>,
  subjects: readonly (() => Promise<Side>)[],
): Promise<Comparison> {
  const prefix = `differential-${randomBytes(4).toString('hex')}`;
  const n = sequence.queues.length;
  const sides: Driver[] = [];
  const onError = (error: unknown) => run?.processErrors.push(String(error));
  let run: Lockstep | undefined;
  process.on('unhandledRejection', onError);
  process.on('uncaughtException', onError);
  let same = true;
  try {
    // Each side names its queues apart: mqlite's deaths are told apart by them.
    for (const [i, open] of [reference, ...subjects].entries()) {
      sides.push(new Driver(await open(), `${prefix}-${i}`, n));
    }
    run = new Lockstep(sides[0]!, sides.slice(1));
    await run.step('the declare', (d) => d.declare(sequence.queues));
    for (const subject of run.subjects) subject.followDeaths();
    same = await runOperations(run, sequence);
  } catch (error) {
    if (!(error instanceof Stuck) || !run) throw error;
    error.driver.trace.push(`stuck: ${error.message}`);
    run.broken = true;
    same = false;
  } finally {
    for (const d of sides) await settles('the cleanup', d, (x) => x.cleanup()).catch(() => {});
    process.off('unhandledRejection', onError);
    process.off('uncaughtException', onError);
  }
  const excusable = !same && !run.broken;
  return {
    same,
    raced: excusable ? run.timeline.raced : undefined,
    deathOrder: excusable ? deathOrder(run.subjects) : undefined,
    dropOrder: excusable && !run.timeline.raced ? run.dropOrder : undefined,
    report: report(sequence, sides),
  };
}

/** Where every mqlite side saw the `x-death` orders part, if they did and traced alike. */
function deathOrder(subjects: readonly Driver[]): string | undefined {
  const [first, ...others] = subjects;
  const parted = first?.deathOrder?.parted;
  const alike = (d: Driver) => d.trace.join('\n') === first!.trace.join('\n');
  if (parted === undefined || !others.every((d) => d.deathOrder?.parted === parted && alike(d))) {
    return undefined;
  }
  return parted;
}

async function runOperations(run: Lockstep, sequence: Sequence): Promise<boolean> {
  const deleted = new Set<number>();
  const b = run.subjects[0]!;
  let published = 0;
  for (const [step, original] of sequence.operations.entries()) {
    const operation = await normaliseOperation(original, {
      deleted,
      busy: async (queue) => {
        const counts = await b.side.counts(b.names[queue]!);
        return counts !== 'gone' && counts.ready + counts.consumers > 0;
      },
      pulled: (n) => {
        const unsettled = b.unsettled;
        return unsettled.length > 0 && unsettled[n % unsettled.length]!.consumer === undefined;
      },
      quorum: (queue) => sequence.queues[queue]!.quorum !== undefined,
      atLimit: (n) => {
        const { unsettled, specs } = b;
        const picked = unsettled[n % Math.max(1, unsettled.length)];
        const limit = picked && specs[picked.queue]!.quorum?.deliveryLimit;
        if (limit === undefined || picked!.consumer === undefined) return false;
        return Number(picked!.message.properties.headers?.['x-delivery-count'] ?? 0) >= limit;
      },
      inFlight: (queue) =>
        b.unsettled.some((u) => u.queue === queue) ||
        b.consumers.some((c) => c.open && c.queue === queue),
    });
    const label = `${step} ${JSON.stringify(original)}`;
    if ('skip' in operation) {
      for (const d of run.all) d.trace.push(`${label} skipped: ${operation.skip}`);
      continue;
    }
    const number = published;
    if (operation.op === 'publish') published += operation.burst ?? 1;
    const agree = await run.run(label, operation, number);
    if (operation.op === 'delete') deleted.add(operation.queue);
    if (!agree) return false;
  }
  return run.finish(deleted);
}

function report(sequence: Sequence, sides: readonly Driver[]): string {
  const lines = [`queues: ${JSON.stringify(sequence.queues)}`];
  const n = Math.max(...sides.map((d) => d.trace.length));
  for (let i = 0; i < n; i++) {
    const step = sides.map((d) => d.trace[i] ?? '');
    if (step.every((x) => x === step[0])) lines.push(`  ${step[0]}`);
    else for (const [j, d] of sides.entries()) lines.push(`≠ ${d.side.name}: ${step[j]}`);
  }
  return lines.join('\n');
}
