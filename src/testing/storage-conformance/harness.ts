/** What every conformance test works with: a harness that reopens, and small helpers. */
import assert from 'node:assert/strict';
import type { Log, LogOptions, RecordCodec, StorageAdapter } from '../../storage/types.js';
import { testRecordCodec } from './codecs.js';

/** Conformance tests by name, each run with a fresh {@link Harness}. */
export type ConformanceTests = Record<string, (h: Harness) => Promise<void>>;

export const NS = 'ns';

/** Opens logs and reopens them (through the adapter's `reopen`, when given) by name. */
export class Harness {
  readonly #reopen: ((adapter: StorageAdapter) => Promise<StorageAdapter>) | undefined;
  readonly #opened = new WeakMap<Log<string>, { ns: string; options: LogOptions }>();

  constructor(
    public adapter: StorageAdapter,
    reopen: ((adapter: StorageAdapter) => Promise<StorageAdapter>) | undefined,
    /** The codec every log of the test is opened with. */
    readonly codec: RecordCodec<string>,
  ) {
    this.#reopen = reopen;
  }

  async log(name = 'log', options: LogOptions = {}, ns = NS): Promise<Log<string>> {
    const log = await (await this.adapter.namespace(ns)).openLog(name, this.codec, options);
    this.#opened.set(log, { ns, options });
    return log;
  }

  /** Reopens the adapter (a no-op without `reopen`). */
  async reopen(): Promise<void> {
    if (this.#reopen) this.adapter = await this.#reopen(this.adapter);
  }

  /** Reopens the adapter and returns `log` opened again (or `log` itself without `reopen`). */
  async reopenLog(log: Log<string>): Promise<Log<string>> {
    if (!this.#reopen) return log;
    const where = this.#opened.get(log);
    assert.ok(where, 'log was not opened through the harness');
    await this.reopen();
    return this.log(log.name, where.options, where.ns);
  }
}

/** Appends `records`, with timestamps `1000 + offset` unless given. */
export function fill(
  log: Log<string>,
  records: readonly string[],
  timestamps?: readonly number[],
): void {
  records.forEach((r, i) => {
    const offset = log.nextOffset;
    assert.equal(log.append(r, timestamps?.[i] ?? 1000 + offset), offset);
  });
}

export function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** Records `rec-0001`, ... of 8 bytes each. */
export function records(n: number): string[] {
  return range(1, n).map((i) => `rec-${String(i).padStart(4, '0')}`);
}

export function readAll(log: Log<string>, from?: number): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  const c = log.cursor(from);
  while (c.next()) out.push([c.offset, c.record]);
  return out;
}

export function bytesOf(rs: readonly string[]): number {
  return rs.reduce((sum, r) => sum + testRecordCodec.byteLength(r), 0);
}

export async function throwsClosed(what: string, fn: () => unknown): Promise<void> {
  let error: unknown;
  try {
    await fn();
  } catch (e) {
    error = e;
  }
  assert.ok(error, `${what} should throw MQLITE_CLOSED`);
  assert.equal((error as { code?: unknown }).code, 'MQLITE_CLOSED', `${what}: ${String(error)}`);
}
