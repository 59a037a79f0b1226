/**
 * A disk in memory that forgets what was not fsynced, for tests that cut the power at every step
 * of an operation. It is the fs adapter's `FsIo` over inodes: a file's bytes become durable when
 * the file is fsynced, a directory's entries (files created, renamed, removed, directories made)
 * when the directory is. Anything else may or may not have reached the disk when the power goes:
 * {@link PowerLossDisk.crashStates} lists, for a crash after a given step, the disk as fsyncs left
 * it, with everything written, and with each change since a chosen step alone kept or alone lost
 * (changes to different files and directories reach a real disk in any order).
 *
 * The lock file and the data directory itself stay on the real file system (the adapter takes
 * them with `node:fs`); everything inside the directory lives here.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { FsIo } from '../../src/storage/fs/io.js';

type Node =
  | { readonly kind: 'file'; data: Buffer }
  | { readonly kind: 'dir'; entries: Map<string, number> };
/** Inodes by number; 0 is the data directory. */
type Inodes = Map<number, Node>;

/** A change not yet durable: `key` names the fsync that makes it so (`f<ino>` or `d<ino>`). */
interface Change {
  readonly key: string;
  readonly step: number;
  apply(inodes: Inodes): void;
}

/** The disk as a crash after some step leaves it, and how it came to be so. */
export interface CrashState {
  /** The step the crash came after, and which changes not fsynced reached the disk. */
  readonly label: string;
  readonly inodes: Inodes;
}

interface Snapshot {
  readonly step: number;
  readonly durable: Inodes;
  readonly pending: readonly Change[];
}

function clone(inodes: Inodes): Inodes {
  const copy: Inodes = new Map();
  for (const [ino, node] of inodes) {
    copy.set(
      ino,
      node.kind === 'file'
        ? { kind: 'file', data: Buffer.from(node.data) }
        : { kind: 'dir', entries: new Map(node.entries) },
    );
  }
  return copy;
}

/** The inode `ino` of `inodes`, made (empty) when a change reached the disk before its creation. */
function fileOf(inodes: Inodes, ino: number): { data: Buffer } {
  let node = inodes.get(ino);
  if (!node) inodes.set(ino, (node = { kind: 'file', data: Buffer.alloc(0) }));
  if (node.kind !== 'file') throw new Error(`inode ${ino} is not a file`);
  return node;
}

function dirOf(inodes: Inodes, ino: number): Map<string, number> {
  let node = inodes.get(ino);
  if (!node) inodes.set(ino, (node = { kind: 'dir', entries: new Map() }));
  if (node.kind !== 'dir') throw new Error(`inode ${ino} is not a directory`);
  return node.entries;
}

/** Makes inode `ino` (empty) in `inodes` when a change naming it reached the disk before its bytes. */
function ensure(inodes: Inodes, ino: number, kind: Node['kind']): void {
  if (inodes.has(ino)) return;
  inodes.set(ino, kind === 'file' ? { kind, data: Buffer.alloc(0) } : { kind, entries: new Map() });
}

/** What a reader finds from the root of `inodes`: every path with its kind and bytes. */
function contentKey(inodes: Inodes): string {
  const hash = createHash('sha256');
  const walk = (ino: number, at: string): void => {
    const node = inodes.get(ino);
    if (!node) return;
    if (node.kind === 'file') {
      hash.update(`f${at}\0${node.data.length}\0`).update(node.data);
      return;
    }
    hash.update(`d${at}\0`);
    for (const name of [...node.entries.keys()].sort())
      walk(node.entries.get(name)!, `${at}/${name}`);
  };
  walk(0, '');
  return hash.digest('hex');
}

/**
 * `states` without the disks that are, as read from the root, the same as an earlier one's: many
 * crashes leave one disk (a change lost before the next fsync, the same change alone kept at two
 * steps), and a disk reopened twice tells nothing new.
 */
export function distinctStates(states: readonly CrashState[]): CrashState[] {
  const seen = new Set<string>();
  return states.filter((state) => {
    const key = contentKey(state.inodes);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function errno(code: string, what: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${what}`), { code });
}

export class PowerLossDisk {
  readonly root: string;
  readonly io: FsIo;
  #volatile: Inodes;
  #durable: Inodes;
  #pending: Change[] = [];
  #nextIno: number;
  #step = 0;
  #recordFrom: number | undefined;
  readonly #snapshots: Snapshot[] = [];
  readonly #fds = new Map<number, number>();
  #nextFd = 3;

  /** A disk for the data directory `root`, empty or as `inodes` (all durable). */
  constructor(root: string, inodes?: Inodes) {
    this.root = path.resolve(root);
    this.#durable = inodes ? clone(inodes) : new Map([[0, { kind: 'dir', entries: new Map() }]]);
    this.#volatile = clone(this.#durable);
    this.#nextIno = Math.max(...this.#durable.keys()) + 1;
    this.io = this.#makeIo();
  }

  /** Steps (changes and fsyncs) taken so far. */
  get step(): number {
    return this.#step;
  }

  /** From now on, keeps what a crash after each step would leave (see `crashStates`). */
  record(): void {
    this.#recordFrom = this.#step;
    this.#snapshot();
  }

  /**
   * The disks a crash after each step since `record()` may leave: as fsyncs left it; with every
   * change; and, for each change made since `record()` and not yet durable, with that one alone
   * kept, and with that one alone lost. Changes before `record()` not yet durable are kept only
   * with every change.
   */
  crashStates(): CrashState[] {
    const from = this.#recordFrom ?? 0;
    const states: CrashState[] = [];
    for (const { step, durable, pending } of this.#snapshots) {
      const build = (label: string, keep: (change: Change) => boolean) => {
        const inodes = clone(durable);
        for (const change of pending) if (keep(change)) change.apply(inodes);
        states.push({ label: `after step ${step - from}: ${label}`, inodes });
      };
      build('nothing unsynced kept', () => false);
      build('everything kept', () => true);
      const recent = pending.filter((change) => change.step > from);
      for (const [i, only] of recent.entries()) {
        build(`only unsynced change ${i} kept`, (change) => change === only);
        build(`only unsynced change ${i} lost`, (change) => change !== only);
      }
    }
    return states;
  }

  /** The names in the directory `dir` (relative to the root), as the disk has them now. */
  list(dir = ''): string[] {
    const ino = this.#lookup(path.join(this.root, dir));
    const node = ino === undefined ? undefined : this.#volatile.get(ino);
    return node?.kind === 'dir' ? [...node.entries.keys()].sort() : [];
  }

  #snapshot(): void {
    if (this.#recordFrom === undefined) return;
    this.#snapshots.push({
      step: this.#step,
      durable: clone(this.#durable),
      pending: [...this.#pending],
    });
  }

  #change(key: string, apply: (inodes: Inodes) => void): void {
    apply(this.#volatile);
    this.#step++;
    this.#pending.push({ key, step: this.#step, apply });
    this.#snapshot();
  }

  #flush(key: string): void {
    const [now, later] = [
      this.#pending.filter((change) => change.key === key),
      this.#pending.filter((change) => change.key !== key),
    ];
    for (const change of now) change.apply(this.#durable);
    this.#pending = later;
    this.#step++;
    this.#snapshot();
  }

  /** The parts of `file` below the root, or undefined when it is outside. */
  #parts(file: string): string[] | undefined {
    const relative = path.relative(this.root, path.resolve(file));
    if (relative === '') return [];
    if (relative.startsWith('..') || path.isAbsolute(relative)) return undefined;
    return relative.split(path.sep);
  }

  #lookup(file: string): number | undefined {
    const parts = this.#parts(file);
    if (!parts) return undefined;
    let ino = 0;
    for (const part of parts) {
      const node = this.#volatile.get(ino);
      if (node?.kind !== 'dir') return undefined;
      const next = node.entries.get(part);
      if (next === undefined) return undefined;
      ino = next;
    }
    return ino;
  }

  /** The directory holding `file` and the name in it; throws ENOENT when it does not exist. */
  #parent(file: string): [number, string] {
    const parts = this.#parts(file);
    if (!parts || parts.length === 0) throw errno('EINVAL', `'${file}' is not inside the disk`);
    const dir = this.#lookup(path.dirname(path.resolve(file)));
    if (dir === undefined || this.#volatile.get(dir)?.kind !== 'dir') {
      throw errno('ENOENT', `no such directory for '${file}'`);
    }
    return [dir, parts.at(-1)!];
  }

  #inode(fd: number): number {
    const ino = this.#fds.get(fd);
    if (ino === undefined) throw errno('EBADF', `bad file descriptor ${fd}`);
    return ino;
  }

  #file(fd: number): { data: Buffer } {
    return fileOf(this.#volatile, this.#inode(fd));
  }

  #link(dir: number, name: string, ino: number): void {
    const kind = this.#volatile.get(ino)!.kind;
    this.#change(`d${dir}`, (inodes) => {
      ensure(inodes, ino, kind);
      dirOf(inodes, dir).set(name, ino);
    });
  }

  #unlink(dir: number, name: string, ino: number): void {
    this.#change(`d${dir}`, (inodes) => {
      const entries = dirOf(inodes, dir);
      if (entries.get(name) === ino) entries.delete(name);
    });
  }

  /** Removes `ino`, named `name` in `dir`, and everything below it, children first. */
  #remove(dir: number, name: string, ino: number): void {
    const node = this.#volatile.get(ino);
    if (node?.kind === 'dir') {
      for (const [child, childIno] of [...node.entries]) this.#remove(ino, child, childIno);
    }
    this.#unlink(dir, name, ino);
  }

  #makeIo(): FsIo {
    const write = (fd: number, bytes: Uint8Array, position: number) => {
      const ino = this.#inode(fd);
      const copy = Buffer.from(bytes);
      this.#change(`f${ino}`, (inodes) => {
        const file = fileOf(inodes, ino);
        if (file.data.length < position + copy.length) {
          const grown = Buffer.alloc(position + copy.length);
          file.data.copy(grown);
          file.data = grown;
        }
        copy.copy(file.data, position);
      });
    };
    const truncate = (ino: number, length: number) => {
      this.#change(`f${ino}`, (inodes) => {
        const file = fileOf(inodes, ino);
        const data = Buffer.alloc(length);
        file.data.copy(data, 0, 0, Math.min(length, file.data.length));
        file.data = data;
      });
    };
    const sync = (fd: number) => {
      const ino = this.#inode(fd);
      this.#flush(this.#volatile.get(ino)?.kind === 'dir' ? `d${ino}` : `f${ino}`);
    };
    return {
      openSync: (file, flags) => {
        let ino = this.#lookup(file);
        if (ino !== undefined && flags.includes('x')) throw errno('EEXIST', `'${file}' exists`);
        if (ino === undefined) {
          if (!/[wa]/.test(flags)) throw errno('ENOENT', `no such file '${file}'`);
          const [dir, name] = this.#parent(file);
          ino = this.#nextIno++;
          const created = ino;
          this.#volatile.set(created, { kind: 'file', data: Buffer.alloc(0) });
          this.#link(dir, name, created);
        } else if (flags.startsWith('w')) {
          truncate(ino, 0);
        }
        const fd = this.#nextFd++;
        this.#fds.set(fd, ino);
        return fd;
      },
      closeSync: (fd) => {
        this.#inode(fd);
        this.#fds.delete(fd);
      },
      writeSync: (fd, buffer, offset, length, position) => {
        write(fd, buffer.subarray(offset, offset + length), position);
        return length;
      },
      readSync: (fd, buffer, offset, length, position) => {
        const bytes = this.#file(fd).data.subarray(position, position + length);
        buffer.set(bytes, offset);
        return bytes.length;
      },
      fsync: (fd, callback) => {
        try {
          sync(fd);
        } catch (error) {
          setImmediate(() => callback(error as Error));
          return;
        }
        setImmediate(() => callback(null));
      },
      fsyncSync: (fd) => sync(fd),
      ftruncateSync: (fd, length) => truncate(this.#inode(fd), length),
      sizeSync: (fd) => this.#file(fd).data.length,
      renameSync: (from, to) => {
        const ino = this.#lookup(from);
        if (ino === undefined) throw errno('ENOENT', `no such file '${from}'`);
        const [fromDir, fromName] = this.#parent(from);
        const [toDir, toName] = this.#parent(to);
        if (fromDir === toDir) {
          const kind = this.#volatile.get(ino)!.kind;
          this.#change(`d${toDir}`, (inodes) => {
            ensure(inodes, ino, kind);
            const entries = dirOf(inodes, toDir);
            if (entries.get(fromName) === ino) entries.delete(fromName);
            entries.set(toName, ino);
          });
        } else {
          this.#link(toDir, toName, ino);
          this.#unlink(fromDir, fromName, ino);
        }
      },
      unlinkSync: (file) => {
        const ino = this.#lookup(file);
        if (ino === undefined) throw errno('ENOENT', `no such file '${file}'`);
        const [dir, name] = this.#parent(file);
        this.#unlink(dir, name, ino);
      },
      mkdirSync: (dir) => {
        const parts = this.#parts(dir);
        if (!parts) return;
        let at = this.root;
        for (const part of parts) {
          at = path.join(at, part);
          if (this.#lookup(at) !== undefined) continue;
          const [parent, name] = this.#parent(at);
          const ino = this.#nextIno++;
          this.#volatile.set(ino, { kind: 'dir', entries: new Map() });
          this.#link(parent, name, ino);
        }
      },
      readdirSync: (dir) => this.list(path.relative(this.root, path.resolve(dir))),
      rmSync: (file) => {
        const ino = this.#lookup(file);
        if (ino === undefined || ino === 0) return;
        const [dir, name] = this.#parent(file);
        this.#remove(dir, name, ino);
      },
      existsSync: (file) => this.#lookup(file) !== undefined,
      isDirectorySync: (file) => {
        const ino = this.#lookup(file);
        return ino !== undefined && this.#volatile.get(ino)?.kind === 'dir';
      },
    };
  }
}
