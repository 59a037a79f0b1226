/**
 * A progress bar on stderr for long commands: bytes done, the total and the rate, redrawn in
 * place at most every {@link REDRAW_MS}. Drawn only on a terminal (`io.interactive`); piped
 * output gets none. Hand-written: the whole job is one line of text redrawn with a carriage
 * return, less code than configuring a progress package (cli-progress alone is larger than this
 * command).
 */
import type { CliIo } from './command.js';
import { formatBytes } from './render.js';

/** At most ten redraws a second: faster is flicker, and costs terminal writes. */
const REDRAW_MS = 100;
const WIDTH = 30;

export interface Progress {
  /** Reports `done` of `total` bytes; redraws if the last draw is old enough. */
  update(done: number, total: number): void;
  /** Clears the bar (the line is left empty for what follows). */
  end(): void;
}

const silent: Progress = { update: () => {}, end: () => {} };

/** A bar on `io.stderr`, or nothing when it is not a terminal. `now` reads milliseconds. */
export function progressBar(io: CliIo, now: () => number = () => performance.now()): Progress {
  if (!io.interactive) return silent;
  const started = now();
  let drawn = Number.NEGATIVE_INFINITY;
  let shown = false;
  return {
    update(done, total) {
      const at = now();
      if (at - drawn < REDRAW_MS && done < total) return;
      drawn = at;
      shown = true;
      const share = total > 0 ? Math.min(1, done / total) : 1;
      const filled = Math.round(share * WIDTH);
      const seconds = (at - started) / 1000;
      const rate = seconds > 0 ? `${formatBytes(done / seconds)}/s` : '';
      const bar = `${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}`;
      io.stderr.write(`\r[${bar}] ${formatBytes(done)} / ${formatBytes(total)}  ${rate}\x1b[K`);
    },
    end() {
      if (shown) io.stderr.write('\r\x1b[K');
    },
  };
}
