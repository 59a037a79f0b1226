/**
 * The crash loop: runs the worker (`worker.ts`) on a data directory, kills it with SIGKILL at a
 * seeded random moment, reopens the directory as a restarted process would and checks it against
 * what the worker printed:
 * - every resolved publish is there, unless acked since (classic and priority queues), dropped
 *   from the head by retention (the stream) or superseded by a newer value of its key (LVQ);
 * - nothing delivered is corrupt or was never published;
 * - the stream's offsets have no gap and its ids grow with them; the stored offset of its
 *   consumer is not past the end and reopening reported no clamp;
 * - each LVQ key holds a value at least as new as its latest resolved one;
 * - nothing is damaged, and a scratch queue (declared and deleted now and then, never published
 *   to) is there empty or not there;
 * - every resolved publish to the quorum queue (which dead-letters `at-least-once`) is still in
 *   it, or in its dead-letter target, or was acked from there: never lost between the two. A
 *   dead letter found twice (in both, or twice in the target, or again after its ack) is
 *   counted; it may come only from a kill: the worker never dead-letters an id twice in one run,
 *   and the target never holds more copies of an id than the worker dead-lettered it;
 * - every resolved delayed publish not acked since is still held or was routed to its queue,
 *   none was delivered before it was due; one routed again after recovery though routed before
 *   the kill (delivered to the worker, or in its queue at reopen) is counted, and must have
 *   been settling at the kill: due at most {@link IN_FLIGHT_MS} before it.
 *
 * The worker is bundled once per process (esbuild), so a run starts in a fraction of the time
 * a TypeScript loader takes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Broker } from '../../../src/broker/broker.js';
import { DataLossError } from '../../../src/errors.js';
import { fsStorage } from '../../../src/storage/fs/index.js';
import { ManualClock, simulateCrash } from '../../../src/testing/index.js';
import { bundled } from '../bundle.js';
import {
  DELAYED,
  DELAYED_DECLARATION,
  idOfBody,
  type PolicyName,
  QUEUE_NAMES,
  QUEUES,
  QUORUM_DEAD,
  type QueueName,
  READER,
  random,
  SCRATCH,
  type Target,
} from './workload.js';

/**
 * How long before a kill a delayed message routed twice may have fallen due: its queue's fsync
 * and its settle's, on a loaded machine. One routed in an earlier run was settled long before.
 */
export const IN_FLIGHT_MS = 2000;

export interface CrashLoopOptions {
  readonly dir: string;
  readonly policy: PolicyName;
  readonly seed: number;
  readonly kills: number;
  /** Longest wait after the worker is up before the kill (default 80 ms). */
  readonly maxDelayMs?: number;
  /** Called after each check. */
  readonly onRun?: (run: number, result: CrashLoopResult) => void;
}

export interface CrashLoopResult {
  kills: number;
  /** Kills timed from the worker's spawn rather than from its first resolved publish. */
  earlyKills: number;
  /** Resolved publishes checked after a kill (each once, at the first check after it). */
  resolvedChecked: number;
  losses: number;
  corrupt: number;
  /** Kills that came while a scratch queue was being declared or deleted. */
  structuralKills: number;
  /** Delayed messages routed again after recovery though routed before the kill. */
  delayedTwice: number;
  /** Torn last writes that reopening cut (and reported). */
  tornCut: number;
  /** Quorum deliveries the worker rejected or requeued past the delivery limit (`D` lines). */
  deadLettered: number;
  /** Dead letters found in the quorum queue's target at a check (each checked). */
  deadLettersChecked: number;
  /**
   * Quorum dead letters found again: in the source and the target, twice in the target, or in
   * the target after an ack (at-least-once allows them after a kill).
   */
  deadLetterDuplicates: number;
  /** Milliseconds each reopen (`Broker.open` on the crashed directory) took. */
  readonly reopenMs: number[];
}

/** A broken promise, with what is needed to replay and read it. */
export class CrashLoopViolation extends Error {
  override name = 'CrashLoopViolation';
}

/** The worker bundled into one ESM file (built once per process). */
export function workerBundle(): Promise<string> {
  return bundled(new URL('./worker.ts', import.meta.url));
}

/** What the worker printed, as the checker keeps it across runs. */
class Ledger {
  /** Ids whose publish started, per queue. */
  readonly attempted = new Map<Target, Set<number>>(
    ([...QUEUE_NAMES, DELAYED] as Target[]).map((q) => [q, new Set()]),
  );
  /** Resolved and not acked since (classic, priority, delayed). */
  readonly pending = new Map<Target, Set<number>>([
    ['classic', new Set()],
    ['prio', new Set()],
    ['quorum', new Set()],
    [DELAYED, new Set()],
  ]);
  /** Acked before their publish resolved (a consumer may get a message that early). */
  readonly ackedEarly = new Map<Target, Set<number>>([
    ['classic', new Set()],
    ['prio', new Set()],
    ['quorum', new Set()],
    [DELAYED, new Set()],
  ]);
  /** How many times the worker dead-lettered each quorum id (`D` lines). */
  readonly deadLettered = new Map<number, number>();
  /** Quorum ids dead-lettered in this run. */
  readonly deadLetteredThisRun = new Set<number>();
  /** Quorum ids whose dead letter the worker acked from the target. */
  readonly deadAcked = new Set<number>();
  /** Quorum ids the worker dead-lettered twice in one run. */
  readonly deadLetteredTwice: string[] = [];
  /** Delayed messages the worker got before they were due. */
  readonly early: string[] = [];
  /** Delayed messages the worker got (acked or about to be). */
  readonly delivered = new Set<number>();
  /** When the last run's worker was killed (ms since epoch). */
  killedAt = 0;
  /** Resolved stream ids not yet known dropped by retention, ascending. */
  streamResolved: number[] = [];
  /** Latest resolved id per LVQ key. */
  readonly lvqLatest = new Map<string, number>();
  /** Resolved publishes not checked yet. */
  unchecked = 0;
  /** A scratch queue's declare or delete was under way (its last `Q` line was not `done`). */
  structural = false;
  /** The last lines, for a violation's trace. */
  readonly trace: string[] = [];

  apply(line: string): void {
    this.trace.push(line);
    if (this.trace.length > 40) this.trace.shift();
    const [kind, queue, a, b] = line.split(' ') as [string, QueueName, string, string?];
    if (kind === 'E') {
      this.early.push(line);
    } else if (kind === 'D') {
      const id = Number(a);
      this.deadLettered.set(id, (this.deadLettered.get(id) ?? 0) + 1);
      if (this.deadLetteredThisRun.has(id)) this.deadLetteredTwice.push(line);
      this.deadLetteredThisRun.add(id);
    } else if (kind === 'A' && queue === (QUORUM_DEAD as string)) {
      // The dead letter of a quorum id acked from the target: its journey is over.
      const id = Number(a);
      this.deadAcked.add(id);
      if (!this.pending.get('quorum')!.delete(id)) this.ackedEarly.get('quorum')!.add(id);
    } else if (kind === 'Q') {
      this.structural = queue !== ('done' as string);
    } else if (kind === 'S') {
      const set = this.attempted.get(queue)!;
      for (let id = Number(a); id <= Number(b); id++) set.add(id);
    } else if (kind === 'P') {
      const id = Number(a);
      this.unchecked++;
      if (queue === 'stream') this.streamResolved.push(id);
      else if (queue === 'lvq') this.lvqLatest.set(b!, Math.max(id, this.lvqLatest.get(b!) ?? 0));
      else if (!this.ackedEarly.get(queue)!.delete(id)) this.pending.get(queue)!.add(id);
    } else if (kind === 'A' && queue !== 'stream') {
      const id = Number(a);
      if ((queue as Target) === DELAYED) this.delivered.add(id);
      if (!this.pending.get(queue)!.delete(id)) this.ackedEarly.get(queue)!.add(id);
    }
  }
}

/** Runs the loop; throws a {@link CrashLoopViolation} (with seed and trace) on the first violation. */
export async function crashLoop(options: CrashLoopOptions): Promise<CrashLoopResult> {
  const worker = await workerBundle();
  const rand = random(options.seed);
  const ledger = new Ledger();
  const result: CrashLoopResult = {
    kills: 0,
    earlyKills: 0,
    resolvedChecked: 0,
    losses: 0,
    corrupt: 0,
    structuralKills: 0,
    delayedTwice: 0,
    tornCut: 0,
    deadLettered: 0,
    deadLettersChecked: 0,
    deadLetterDuplicates: 0,
    reopenMs: [],
  };
  for (let run = 1; run <= options.kills; run++) {
    // Mostly at a moment of the workload; sometimes early, while the worker opens and recovers.
    const early = rand() < 0.15;
    const delay = rand() * (early ? 300 : (options.maxDelayMs ?? 80));
    const stderr = await runAndKill(worker, options, run, early, delay, ledger);
    result.kills++;
    ledger.deadLetteredThisRun.clear();
    if (early) result.earlyKills++;
    if (ledger.structural) result.structuralKills++;
    ledger.structural = false;
    const context = `seed ${options.seed}, policy ${options.policy}, run ${run} (kill ${
      early ? 'after spawn' : 'after the first resolved publish'
    } +${delay.toFixed(1)} ms)`;
    const violations = await check(options.dir, ledger, result);
    if (violations.length > 0) {
      throw new CrashLoopViolation(
        `crash loop violation, ${context}, dir ${options.dir}:\n  ${violations.slice(0, 20).join('\n  ')}\n` +
          `last worker lines:\n  ${ledger.trace.join('\n  ')}\nworker stderr: ${stderr.slice(-2000)}`,
      );
    }
    options.onRun?.(run, result);
  }
  return result;
}

function runAndKill(
  worker: string,
  options: CrashLoopOptions,
  run: number,
  early: boolean,
  delay: number,
  ledger: Ledger,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(
      process.execPath,
      [worker, options.dir, options.policy, String(options.seed), String(run)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let pending = '';
    let stderr = '';
    let timer: NodeJS.Timeout | undefined;
    let ready = false;
    const kill = () => {
      timer = setTimeout(() => {
        ledger.killedAt = Date.now();
        child.kill('SIGKILL');
      }, delay);
    };
    if (early) kill();
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        if (line === 'R') {
          ready = true;
          continue;
        }
        ledger.apply(line);
        // Timed from the first resolved publish, not from 'R': on a loaded machine a kill timed
        // from 'R' can come before anything resolved, and the run then checks nothing.
        if (ready && !timer && line.startsWith('P ')) kill();
      }
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    // Lines written before the kill may still sit in the pipe: 'close' delivers them. A torn
    // last line is one the worker was killed while writing: what it announced may be on disk.
    child.on('close', (_code, signal) => {
      if (timer) clearTimeout(timer);
      if (pending) ledger.apply(pending);
      if (signal !== 'SIGKILL') {
        reject(new CrashLoopViolation(`worker exited by itself (run ${run}): ${stderr}`));
      } else resolve(stderr);
    });
  });
}

/**
 * The quorum queue and its dead-letter target: every resolved id not acked from the target is in
 * one of them; copies beyond one are counted, and never more in the target than the worker
 * dead-lettered.
 */
async function checkQuorum(
  broker: Broker,
  ledger: Ledger,
  result: CrashLoopResult,
  bad: (queue: Target, body: string, where: string) => number | undefined,
): Promise<string[]> {
  const violations = ledger.deadLetteredTwice
    .splice(0)
    .map((line) => `quorum: dead-lettered twice in one run: ${line}`);
  result.deadLettered = [...ledger.deadLettered.values()].reduce((sum, n) => sum + n, 0);
  const source = await broker.queue('quorum', QUEUES.quorum);
  const inSource = new Set<number>();
  for (let m = await source.get({ noAck: false }); m; m = await source.get({ noAck: false })) {
    const id = bad('quorum', m.bodyString(), 'get');
    if (id === undefined) continue;
    if (inSource.has(id)) violations.push(`quorum: id ${id} delivered twice`);
    inSource.add(id);
  }
  const target = await broker.queue(QUORUM_DEAD, { durable: true });
  const copies = new Map<number, number>();
  for (let m = await target.get({ noAck: false }); m; m = await target.get({ noAck: false })) {
    const id = bad('quorum', m.bodyString(), QUORUM_DEAD);
    if (id === undefined) continue;
    result.deadLettersChecked++;
    const n = (copies.get(id) ?? 0) + 1;
    copies.set(id, n);
    if (n > 1 || inSource.has(id) || ledger.deadAcked.has(id)) result.deadLetterDuplicates++;
    if (n > (ledger.deadLettered.get(id) ?? 0)) {
      violations.push(
        `${QUORUM_DEAD}: ${n} copies of quorum id ${id}, dead-lettered ${ledger.deadLettered.get(id) ?? 0} times`,
      );
    }
  }
  for (const id of ledger.pending.get('quorum')!) {
    if (!inSource.has(id) && !copies.has(id)) {
      result.losses++;
      violations.push(`quorum: resolved id ${id} is in neither quorum nor ${QUORUM_DEAD}`);
    }
  }
  return violations;
}

/** Reopens the directory and checks it; returns the violations found. */
async function check(dir: string, ledger: Ledger, result: CrashLoopResult): Promise<string[]> {
  const violations: string[] = [];
  const reported: unknown[] = [];
  const storage = fsStorage({ dir, fsync: 'never' });
  const started = performance.now();
  // A clock an hour ahead: every delayed message held is due, and routed when it is moved.
  const clock = new ManualClock(Date.now() + 3_600_000);
  const broker = await Broker.open({ storage, clock, onError: (error) => reported.push(error) });
  result.reopenMs.push(performance.now() - started);
  try {
    // A crash may leave a torn last write, which recovery cuts and reports; anything else
    // reported on open (damage, a gap, a reset offset) is a violation.
    for (const error of reported) {
      if (error instanceof DataLossError && error.kind === 'torn-write') {
        result.tornCut++;
        continue;
      }
      violations.push(`reported on open: ${String(error)}`);
    }
    const bad = (queue: Target, body: string, where: string) => {
      const id = idOfBody(queue, body);
      if (id === undefined) {
        result.corrupt++;
        violations.push(`${queue}: corrupt delivery at ${where}: ${body.slice(0, 60)}`);
      } else if (!ledger.attempted.get(queue)!.has(id)) {
        result.corrupt++;
        violations.push(`${queue}: id ${id} at ${where} was never published`);
      }
      return id;
    };
    const queue = (name: QueueName) => broker.queue(name, QUEUES[name]);

    // Classic and priority queues: every pending id is there, once.
    for (const name of ['classic', 'prio'] as const) {
      const q = await queue(name);
      const seen = new Set<number>();
      for (let m = await q.get({ noAck: false }); m; m = await q.get({ noAck: false })) {
        const id = bad(name, m.bodyString(), 'get');
        if (id === undefined) continue;
        if (seen.has(id)) violations.push(`${name}: id ${id} delivered twice`);
        seen.add(id);
      }
      for (const id of ledger.pending.get(name)!) {
        if (!seen.has(id)) {
          result.losses++;
          violations.push(`${name}: resolved id ${id} (not acked) is missing`);
        }
      }
    }

    // The stream: offsets without gaps, ids growing with them, every resolved id retained.
    const stream = await broker.queue('stream', QUEUES.stream);
    const stored = stream.storedOffset(READER);
    if (stored !== undefined && stored > stream.nextOffset) {
      violations.push(`stream: stored offset ${stored} past the end ${stream.nextOffset}`);
    }
    let expectedOffset = stream.firstOffset;
    let lastId = 0;
    const present = new Set<number>();
    for (const { offset, message } of stream.read('first')) {
      if (offset !== expectedOffset)
        violations.push(`stream: offset ${offset}, expected ${expectedOffset}`);
      expectedOffset = offset + 1;
      const id = bad('stream', Buffer.from(message.body).toString('utf8'), `offset ${offset}`);
      if (id === undefined) continue;
      if (id <= lastId) violations.push(`stream: id ${id} at offset ${offset} after id ${lastId}`);
      lastId = id;
      present.add(id);
    }
    if (expectedOffset !== stream.nextOffset) {
      violations.push(`stream: read up to ${expectedOffset}, next offset ${stream.nextOffset}`);
    }
    const oldest = Math.min(...present);
    // Ids below the oldest retained one went with retention.
    ledger.streamResolved = ledger.streamResolved.filter(
      (id) => id >= oldest || present.size === 0,
    );
    for (const id of ledger.streamResolved) {
      if (!present.has(id)) {
        result.losses++;
        violations.push(`stream: resolved id ${id} is missing`);
      }
    }

    // The last-value queue: one value per key, at least as new as the latest resolved.
    const lvq = await broker.queue('lvq', QUEUES.lvq);
    const values = new Map<string, number>();
    for (const m of lvq.values()) {
      const key = String(m.properties.headers?.k);
      const id = bad('lvq', m.bodyString(), `key ${key}`);
      if (id === undefined) continue;
      if (values.has(key)) violations.push(`lvq: key ${key} holds ${values.get(key)} and ${id}`);
      values.set(key, id);
    }
    for (const [key, latest] of ledger.lvqLatest) {
      const value = values.get(key);
      if (value === undefined || value < latest) {
        result.losses++;
        violations.push(`lvq: key ${key} holds ${value ?? 'nothing'}, latest resolved ${latest}`);
      }
    }
    violations.push(...(await checkQuorum(broker, ledger, result, bad)));

    // The delayed exchange: routed all it holds (all due on this clock), none early, none lost,
    // none routed again that was routed before the kill unless it was settling then.
    await broker.exchange(DELAYED, 'x-delayed-message', DELAYED_DECLARATION);
    const routed = await broker.queue(DELAYED, { durable: true });
    const routedIds = new Set<number>();
    const take = async (onEach: (id: number, due: number) => void) => {
      for (let m = await routed.get({ noAck: false }); m; m = await routed.get({ noAck: false })) {
        const id = bad(DELAYED, m.bodyString(), 'get');
        if (id !== undefined) onEach(id, Number(m.properties.headers?.due));
      }
    };
    const twice = (id: number, due: number) => {
      result.delayedTwice++;
      if (due < ledger.killedAt - IN_FLIGHT_MS) {
        violations.push(
          `${DELAYED}: id ${id} routed again, due ${ledger.killedAt - due} ms before the kill`,
        );
      }
    };
    // Routed before the kill: in the queue before the clock moves (copies of an earlier
    // double routing were counted when it happened).
    await take((id) => routedIds.add(id));
    clock.advance(0);
    const held = () => broker.exchanges().find((e) => e.name === DELAYED)?.delayed?.messages;
    for (const end = Date.now() + 30_000; held() !== 0 && Date.now() < end; ) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (held() !== 0) violations.push(`${DELAYED}: still holds ${held()} messages all due`);
    violations.push(...ledger.early.splice(0).map((line) => `delivered before due: ${line}`));
    // Routed now, after recovery.
    await take((id, due) => {
      if (routedIds.has(id) || ledger.delivered.has(id)) twice(id, due);
      routedIds.add(id);
    });
    for (const id of ledger.pending.get(DELAYED)!) {
      if (!routedIds.has(id)) {
        result.losses++;
        violations.push(`${DELAYED}: resolved id ${id} (not acked) is missing`);
      }
    }
    // A scratch queue whose declare or delete a kill cut short is there whole, or not at all.
    for (const damaged of broker.damaged()) violations.push(`${damaged.name}: damaged on open`);
    for (const info of broker.queues()) {
      if (info.name.startsWith(SCRATCH) && info.messages !== 0) {
        violations.push(`${info.name}: holds ${info.messages} messages, never published to`);
      }
    }
    result.resolvedChecked += ledger.unchecked;
    ledger.unchecked = 0;
  } finally {
    // Nothing of the check is written back: the next worker starts from the crashed state.
    simulateCrash(storage);
  }
  return violations;
}
