/**
 * The differential property: a random sequence observed on the reference broker and on mqlite
 * gives the same trace. fast-check generates the sequences from a seed and, on a difference,
 * shrinks the sequence to a minimal one; the error then carries both traces.
 */
import { AMQPSession } from '@cloudamqp/amqp-client';
import fc from 'fast-check';
import { type Sequence, sequences } from './operations.js';
import { compareOn } from './run.js';
import { amqpSide, mqliteSide } from './side.js';

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
 * Runs `runs` sequences generated from `seed` on the reference broker and mqlite; throws with the
 * shrunk sequence and both traces on a difference.
 */
export async function checkSeed(
  seed: number,
  runs: number,
  url = referenceUrl,
  generated: fc.Arbitrary<Sequence> = sequences(),
): Promise<number> {
  let agreed = 0;
  await fc.assert(
    fc.asyncProperty(generated, async (sequence) => {
      const result = await compareOn(sequence, () => amqpSide('rabbitmq', url), mqliteSide);
      if (!result.same) throw new Error(`mqlite differs from the broker:\n${result.report}`);
      agreed++;
    }),
    { seed, numRuns: runs, includeErrorInReport: true },
  );
  return agreed;
}
