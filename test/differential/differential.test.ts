/**
 * The randomized differential test in CI: a fixed set of seeds per profile, each a chunk of
 * sequences run on the live RabbitMQ and on mqlite, in process and over its AMQP server (see
 * check.ts). `npm run differential -- --seeds N --profile P` runs more.
 * Left out, as the parity suite leaves the broker out, when `PARITY_TARGETS` does not name it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { checkSeed, referenceUrl, waitForBroker } from './check.js';
import type { Profile } from './profiles.js';

/** Chunks (seeds 1, 2, ...) and sequences per chunk of each profile: a few minutes in all. */
const PLAN: readonly { profile: Profile; chunks: number; runs: number }[] = [
  { profile: 'basic', chunks: 5, runs: 20 },
  { profile: 'dead-letter', chunks: 4, runs: 15 },
  { profile: 'time', chunks: 3, runs: 10 },
  { profile: 'quorum', chunks: 3, runs: 15 },
];
/** At most this share of a chunk's sequences may be set aside as racing a TTL's deadline. */
const MAX_RACED = 0.2;
const reference = process.env.AMQP_URL ? 'amqp-url' : 'rabbitmq';
const chosen = process.env.PARITY_TARGETS?.split(',').map((name) => name.trim());
const withoutReference = chosen !== undefined && !chosen.includes(reference);

describe.skipIf(withoutReference)(
  'mqlite observes as RabbitMQ does, over random operation sequences',
  () => {
    beforeAll(() => waitForBroker(referenceUrl), 60_000);
    for (const { profile, chunks, runs } of PLAN) {
      for (let seed = 1; seed <= chunks; seed++) {
        it(`${profile}, seed ${seed}: ${runs} sequences`, async () => {
          // A mismatch fails inside, shrunk and with the traces; every other sequence agreed.
          const { agreed, raced, deathOrder, dropOrder } = await checkSeed(seed, runs, profile);
          expect(agreed + raced + deathOrder.length + dropOrder.length).toBe(runs);
          expect(raced).toBeLessThanOrEqual(runs * MAX_RACED);
        }, 180_000);
      }
    }
  },
);
