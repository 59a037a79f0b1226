/**
 * The differential property: a random sequence observed on the reference broker and on mqlite
 * gives the same trace. fast-check generates the sequences from a seed and, on a difference,
 * shrinks the sequence to a minimal one; the error then carries both traces.
 */
import { AMQPSession } from '@cloudamqp/amqp-client';
import fc from 'fast-check';
import { type Profile, profileSequences } from './profiles.js';
import { compareOn } from './run.js';
import { amqpSide, mqliteSide, mqliteWireSide } from './side.js';

/** The broker mqlite is compared with: the local RabbitMQ 3.10, or `AMQP_URL`. */
export const referenceUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** Polls until the broker at `url` accepts a connection; fails after `deadlineMs`. */
export async function waitForBroker(url: string, deadlineMs = 30_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    try {
      await (await AMQPSession.connect(url, { logger: null, maxRetries: 1 })).stop();
      return;
    } catch (error) {
      if (Date.now() > end) {
        throw new Error(
          `no AMQP broker at ${url} after ${deadlineMs} ms: ${(error as Error).message}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/**
 * How many sequences of a seed agreed, how many differed only by a TTL's race, and how many
 * only after the documented `x-death` order decided a dead letter's fate (see death-order.ts),
 * and how many only by the documented order of a quorum queue's drop-head dead letters (see
 * drop-order.ts).
 */
export interface SeedResult {
  readonly agreed: number;
  readonly raced: number;
  /** Where each of those parted (see death-order.ts). */
  readonly deathOrder: readonly string[];
  /** What each differing only by a quorum queue's drop-head dead-letter order left in the DLQ. */
  readonly dropOrder: readonly string[];
}

/**
 * Runs `runs` sequences of `profile` generated from `seed` on the reference broker and on
 * mqlite, in process and over its AMQP server; throws with the shrunk sequence and the traces on
 * a difference or a broken invariant. A difference after a deadline fell inside an action (see
 * timeline.ts) is counted as raced instead. `shrink: false` reports the first difference as it
 * was found, without the minutes shrinking takes (each try of a differing sequence waits out the
 * sides' agreement deadline).
 */
export async function checkSeed(
  seed: number,
  runs: number,
  profile: Profile = 'basic',
  { url = referenceUrl, shrink = true }: { url?: string; shrink?: boolean } = {},
): Promise<SeedResult> {
  let agreed = 0;
  let raced = 0;
  const deathOrder: string[] = [];
  const dropOrder: string[] = [];
  await fc.assert(
    fc.asyncProperty(profileSequences(profile), async (sequence) => {
      const result = await compareOn(sequence, () => amqpSide('rabbitmq', url), [
        mqliteSide,
        mqliteWireSide,
      ]);
      if (result.same) agreed++;
      else if (result.raced) raced++;
      else if (result.deathOrder) deathOrder.push(result.deathOrder);
      else if (result.dropOrder) dropOrder.push(result.dropOrder);
      else throw new Error(`mqlite differs from the broker:\n${result.report}`);
    }),
    { seed, numRuns: runs, includeErrorInReport: true, endOnFailure: !shrink },
  );
  return { agreed, raced, deathOrder, dropOrder };
}
