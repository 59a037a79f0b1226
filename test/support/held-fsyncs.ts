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
  /** Holds every fsync from now on. */
  hold(): void;
  /** Runs the held fsyncs and holds no more. */
  release(): void;
}

export function holdFsyncs(): HeldFsyncs {
  const held: (() => void)[] = [];
  let holding = false;
  return {
    io: {
      ...nodeIo,
      fsync(fd: number, callback: (error: Error | null) => void) {
        const run = () => nodeIo.fsync(fd, callback);
        if (holding) held.push(run);
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
