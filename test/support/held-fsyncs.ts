/**
 * An fs io whose fsyncs can be held until released: publishes that wait for the disk then stay
 * waiting, for tests of what goes on meanwhile.
 */
import { nodeIo } from '../../src/storage/fs/io.js';

export interface HeldFsyncs {
  /** The io to open `fsStorage({ dir, io })` with. */
  readonly io: typeof nodeIo;
  /** Fsyncs held now. */
  readonly held: number;
  /** Holds every fsync from now on (of the files `file` matches, when given). */
  hold(): void;
  /** Runs the held fsyncs and holds no more. */
  release(): void;
}

/** With `file`, only fsyncs of the files (and directories) whose path it matches are held. */
export function holdFsyncs(file?: RegExp): HeldFsyncs {
  const held: (() => void)[] = [];
  const paths = new Map<number, string>();
  let holding = false;
  return {
    io: {
      ...nodeIo,
      openSync(path: string, flags: string) {
        const fd = nodeIo.openSync(path, flags);
        paths.set(fd, path);
        return fd;
      },
      fsync(fd: number, callback: (error: Error | null) => void) {
        const run = () => nodeIo.fsync(fd, callback);
        if (holding && (file === undefined || file.test(paths.get(fd) ?? ''))) held.push(run);
        else run();
      },
    },
    get held() {
      return held.length;
    },
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const run of held.splice(0)) run();
    },
  };
}
