/**
 * The metadata store of one namespace (`~meta`, layout in FORMAT.md): an in-memory map,
 * persisted as an append-only file of checksummed JSON records, `[key, value]` or `[key]` for a
 * deletion. Only the latest value of each key changed in a tick is written, so a
 * consumer offset stored on every ack costs one record per batch. The file is compacted (rewritten
 * with the live entries, atomically) on open and whenever it has grown well past them. A torn last
 * record, from a crash mid-write, is dropped on open.
 */

import path from 'node:path';
import { ClosedError } from '../../errors.js';
import { frozenJsonCopy } from '../json-value.js';
import type { JsonValue, MetaStore } from '../types.js';
import { crc32 } from './checksum.js';
import { type FsyncPolicy, SyncScheduler } from './durability.js';
import { allDone, type FsIo, fsyncDir, readFile, replaceFileOpen, writeFully } from './io.js';

const HEAD = 8;
/** Records in the file beyond which it is compacted, if they outnumber live keys fourfold. */
const COMPACT_AFTER = 1024;

export class FsMetaStore implements MetaStore {
  readonly #io: FsIo;
  readonly #file: string;
  readonly #fsync: boolean;
  readonly #map = new Map<string, JsonValue>();
  #sorted: string[] | null = null;
  /** Keys changed since the last write: their current value (or absence) is written. */
  readonly #dirty = new Set<string>();
  readonly #scheduler: SyncScheduler;
  readonly #isClosed: () => boolean;
  readonly #what: string;
  #fd = -1;
  #size = 0;
  #records = 0;
  #unsynced = false;
  /** A rewrite renamed a file: the directory needs an fsync too. */
  #dirUnsynced = false;
  /** Fsyncs in flight, during which replaced descriptors stay open. */
  #pinned = 0;
  readonly #retired: number[] = [];

  constructor(io: FsIo, file: string, policy: FsyncPolicy, what: string, isClosed: () => boolean) {
    this.#io = io;
    this.#file = file;
    this.#fsync = policy !== 'never';
    this.#what = what;
    this.#isClosed = isClosed;
    this.#scheduler = new SyncScheduler(policy, {
      flush: () => this.#flush(),
      fsync: (done) => this.#fsyncFile(done),
    });
    this.#load();
  }

  get(key: string): JsonValue | undefined {
    this.#check();
    return this.#map.get(key);
  }

  set(key: string, value: JsonValue): void {
    this.#check();
    if (typeof key !== 'string') throw new TypeError('metadata key must be a string');
    const frozen = frozenJsonCopy(value);
    if (!this.#map.has(key)) this.#sorted = null;
    this.#map.set(key, frozen);
    this.#dirty.add(key);
    this.#scheduler.touch();
  }

  delete(key: string): void {
    this.#check();
    if (!this.#map.delete(key)) return;
    this.#sorted = null;
    this.#dirty.add(key);
    this.#scheduler.touch();
  }

  entries(prefix = ''): IterableIterator<[string, JsonValue]> {
    this.#check();
    if (typeof prefix !== 'string') throw new TypeError('metadata prefix must be a string');
    this.#sorted ??= [...this.#map.keys()].sort();
    const keys = this.#sorted;
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid]! < prefix) lo = mid + 1;
      else hi = mid;
    }
    const picked: Array<[string, JsonValue]> = [];
    for (let i = lo; i < keys.length && keys[i]!.startsWith(prefix); i++) {
      picked.push([keys[i]!, this.#map.get(keys[i]!)!]);
    }
    return picked[Symbol.iterator]();
  }

  sync(): Promise<void> {
    if (this.#isClosed()) return Promise.reject(new ClosedError(`${this.#what} is closed`));
    return this.#scheduler.sync();
  }

  /** Writes and fsyncs what is pending, then releases the file. */
  async close(): Promise<void> {
    try {
      if (!this.#scheduler.failure) await this.#scheduler.drain();
    } finally {
      this.destroy();
    }
  }

  /** Releases the file without writing (the namespace is being deleted). */
  destroy(): void {
    this.#scheduler.stop(new ClosedError(`${this.#what} is closed`));
    if (this.#fd >= 0) this.#retired.push(this.#fd);
    this.#fd = -1;
    this.#closeRetired();
  }

  #check(): void {
    if (this.#isClosed()) throw new ClosedError(`${this.#what} is closed`);
  }

  #load(): void {
    const buf = readFile(this.#io, this.#file);
    let at = 0;
    let records = 0;
    if (buf) {
      while (at + HEAD <= buf.length) {
        const end = at + HEAD + buf.readUInt32LE(at);
        if (end > buf.length) break;
        const body = buf.subarray(at + HEAD, end);
        if (crc32(body) !== buf.readUInt32LE(at + 4)) break;
        const [key, value] = JSON.parse(body.toString('utf8')) as [string, JsonValue?];
        if (value === undefined) this.#map.delete(key);
        else this.#map.set(key, frozenJsonCopy(value));
        records++;
        at = end;
      }
    }
    // Rewriting on open both compacts and drops a torn tail.
    if (!buf || at !== buf.length || records > this.#map.size) this.#rewrite();
    else {
      this.#fd = this.#io.openSync(this.#file, 'r+');
      this.#size = at;
      this.#records = records;
    }
  }

  #flush(): void {
    if (this.#dirty.size === 0) return;
    if (this.#records + this.#dirty.size > Math.max(COMPACT_AFTER, this.#map.size * 4)) {
      this.#dirty.clear();
      this.#rewrite();
      return;
    }
    const parts: Buffer[] = [];
    for (const key of this.#dirty) parts.push(record(key, this.#map.get(key)));
    const data = Buffer.concat(parts);
    writeFully(this.#io, this.#fd, data, 0, data.length, this.#size);
    this.#size += data.length;
    this.#records += parts.length;
    this.#dirty.clear();
    this.#unsynced = true;
  }

  #rewrite(): void {
    const parts: Buffer[] = [];
    for (const [key, value] of this.#map) parts.push(record(key, value));
    const data = Buffer.concat(parts);
    const fd = replaceFileOpen(this.#io, this.#file, data, this.#fsync);
    if (this.#fd >= 0) this.#retired.push(this.#fd);
    this.#closeRetired();
    this.#fd = fd;
    this.#size = data.length;
    this.#records = parts.length;
    this.#dirUnsynced = true;
  }

  #closeRetired(): void {
    if (this.#pinned > 0) return;
    for (const fd of this.#retired.splice(0)) this.#io.closeSync(fd);
  }

  #fsyncFile(done: (error: Error | null) => void): void {
    const jobs: Array<(cb: (error: Error | null) => void) => void> = [];
    if (this.#unsynced) {
      const fd = this.#fd;
      jobs.push((cb) => this.#io.fsync(fd, cb));
    }
    if (this.#dirUnsynced) jobs.push((cb) => fsyncDir(this.#io, path.dirname(this.#file), cb));
    this.#unsynced = this.#dirUnsynced = false;
    this.#pinned++;
    allDone(jobs, (error) => {
      this.#pinned--;
      this.#closeRetired();
      done(error);
    });
  }
}

function record(key: string, value: JsonValue | undefined): Buffer {
  const json = Buffer.from(JSON.stringify(value === undefined ? [key] : [key, value]), 'utf8');
  const out = Buffer.allocUnsafe(HEAD + json.length);
  out.writeUInt32LE(json.length, 0);
  out.writeUInt32LE(crc32(json), 4);
  json.copy(out, HEAD);
  return out;
}
