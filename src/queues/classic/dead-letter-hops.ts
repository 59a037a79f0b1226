/**
 * Dead-letter hops run one after another, never inside each other. Dead-lettering a message into
 * a full queue makes that queue drop (and dead-letter) another, and so on around a loop of full
 * queues: as nested calls, such a loop recurses through the queues, each caught in the middle of
 * an update. As queued steps, every queue finishes its own update before the next hop starts, as
 * on a broker where each queue is a process of its own and dead letters are messages between
 * them. One queue of hops serves the process: hops are synchronous, so it is empty again before
 * the call that scheduled the first one returns.
 */

/** One hop: hand a dead-letter copy to its router. */
export interface DeadLetterHop {
  run(): void;
  /** Reports an error `run` threw (the hops after it run all the same). */
  fail(error: unknown): void;
}

const hops: DeadLetterHop[] = [];
let running = false;

/** Queues a hop; it runs at the next `runDeadLetterHops` outside a hop, in scheduling order. */
export function scheduleDeadLetterHop(hop: DeadLetterHop): void {
  hops.push(hop);
}

/**
 * Runs every scheduled hop, and the hops they schedule, in order. Called by a queue once its own
 * state is updated; called from within a hop it returns at once (the running loop takes them).
 */
export function runDeadLetterHops(): void {
  if (running) return;
  running = true;
  try {
    // The list grows while it is walked: a hop's own hops run after it, breadth first.
    for (let i = 0; i < hops.length; i++) {
      const hop = hops[i]!;
      try {
        hop.run();
      } catch (error) {
        hop.fail(error);
      }
    }
  } finally {
    hops.length = 0;
    running = false;
  }
}
