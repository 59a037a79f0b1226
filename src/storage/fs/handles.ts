/**
 * The adapter's open file descriptors, bounded: every file a log or a metadata store keeps
 * (`~meta`, `~deleted`, segment files) is a {@link FileHandle} that opens on demand, and one
 * cache per adapter closes the least recently used past its limit. So the number of queues is
 * bounded by the disk, not by `ulimit -n`.
 *
 * A descriptor is never closed under an fsync running on it (it stays open until the fsync
 * ends), and one written since its last fsync is fsynced before it is closed: closing must not
 * make a later fsync of the file (through a new descriptor) the one that finds a write error.
 * Descriptors busy so exceed the limit for as long as the work in flight holds them.
 */
import type { FsIo } from './io.js';

/** Descriptors kept open per adapter by default. */
export const DEFAULT_MAX_OPEN_FILES = 128;

/** Checks a `maxOpenFiles` option. */
export function checkMaxOpenFiles(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`maxOpenFiles must be a positive integer, got ${String(value)}`);
  }
  return value;
}

/** The descriptor cache of one adapter. */
export class Handles {
  readonly io: FsIo;
  readonly #limit: number;
  /** Whether writes are fsynced at all (under the `never` policy nothing waits to be). */
  readonly #fsyncs: boolean;
  /** Handles with an open descriptor, least recently used first. */
  readonly #open = new Set<FileHandle>();
  #newest: FileHandle | undefined;

  constructor(io: FsIo, limit: number, fsyncs: boolean) {
    this.io = io;
    this.#limit = limit;
    this.#fsyncs = fsyncs;
  }

  /** A handle of `file` (opened with `flags` when needed); nothing is opened yet. */
  file(file: string, flags: string): FileHandle {
    return new FileHandle(this, file, flags);
  }

  /** Descriptors open now (busy ones beyond the limit included). */
  get openCount(): number {
    return this.#open.size;
  }

  /** @internal A handle was used: it becomes the most recent. */
  touch(handle: FileHandle): void {
    if (this.#newest === handle) return;
    this.#open.delete(handle);
    this.#open.add(handle);
    this.#newest = handle;
  }

  /** @internal A handle opened a descriptor: others may have to close. */
  opened(handle: FileHandle): void {
    this.touch(handle);
    this.trim();
  }

  /** @internal A handle's descriptor closed. */
  closed(handle: FileHandle): void {
    this.#open.delete(handle);
    if (this.#newest === handle) this.#newest = undefined;
  }

  /** @internal Whether a write must be fsynced before its descriptor may close. */
  get fsyncs(): boolean {
    return this.#fsyncs;
  }

  /**
   * Closes least recently used descriptors until at most the limit are open: clean ones first,
   * then written ones (fsynced first); never the newest nor one under a running fsync.
   */
  trim(): void {
    while (this.#open.size > this.#limit) {
      let victim: FileHandle | undefined;
      let dirty: FileHandle | undefined;
      for (const handle of this.#open) {
        if (handle === this.#newest || handle.pinned > 0) continue;
        if (!handle.unsynced) {
          victim = handle;
          break;
        }
        dirty ??= handle;
      }
      victim ??= dirty;
      if (!victim) return;
      victim.evict();
    }
  }
}

/**
 * One file kept by a log or a metadata store: its descriptor opens on demand, and may be closed
 * by the cache between uses.
 */
export class FileHandle {
  readonly #handles: Handles;
  readonly file: string;
  readonly #flags: string;
  #fd = -1;
  /** Fsyncs running on this file's descriptors: none of them closes before they end. */
  pinned = 0;
  /** Written since the last fsync. */
  unsynced = false;
  /** Descriptors replaced or released while pinned, closed once unpinned. */
  readonly #retired: number[] = [];
  /** An fsync before an eviction failed: the owner's next fsync reports it. */
  #failure: Error | undefined;

  constructor(handles: Handles, file: string, flags: string) {
    this.#handles = handles;
    this.file = file;
    this.#flags = flags;
  }

  /** The open descriptor, opening the file if the cache closed it. */
  get fd(): number {
    if (this.#fd >= 0) {
      this.#handles.touch(this);
      return this.#fd;
    }
    this.#fd = this.#handles.io.openSync(this.file, this.#flags);
    this.#handles.opened(this);
    return this.#fd;
  }

  /** Records a write, which the next fsync round covers (nothing under the `never` policy). */
  wrote(): void {
    if (this.#handles.fsyncs) this.unsynced = true;
  }

  /**
   * Takes `fd`, a descriptor of a new file just renamed to this path, in place of the current
   * one, whose unsynced writes went with the file it replaced.
   */
  adopt(fd: number): void {
    this.#retire();
    this.unsynced = false;
    this.#fd = fd;
    this.#handles.opened(this);
  }

  /** Fsyncs the file; the descriptor stays open until it ends. */
  fsync(done: (error: Error | null) => void): void {
    this.unsynced = false;
    const failure = this.#failure;
    if (failure) {
      this.#failure = undefined;
      done(failure);
      return;
    }
    let fd: number;
    try {
      fd = this.fd;
    } catch (error) {
      done(error as Error);
      return;
    }
    this.pinned++;
    this.#handles.io.fsync(fd, (error) => {
      this.pinned--;
      this.#closeRetired();
      this.#handles.trim();
      done(error);
    });
  }

  /** Closes the descriptor (once no fsync runs on it); a later use opens the file again. */
  release(): void {
    this.#retire();
    this.unsynced = false;
  }

  /** @internal The cache closes the descriptor, fsyncing first what was written. */
  evict(): void {
    if (this.unsynced) {
      this.unsynced = false;
      try {
        this.#handles.io.fsyncSync(this.#fd);
      } catch (error) {
        // Kept for the owner's next round, which the flag makes it run.
        this.#failure ??= error as Error;
        this.unsynced = true;
      }
    }
    this.#retire();
  }

  #retire(): void {
    if (this.#fd < 0) return;
    this.#retired.push(this.#fd);
    this.#fd = -1;
    this.#handles.closed(this);
    this.#closeRetired();
  }

  #closeRetired(): void {
    if (this.pinned > 0) return;
    for (const fd of this.#retired.splice(0)) this.#handles.io.closeSync(fd);
  }
}
