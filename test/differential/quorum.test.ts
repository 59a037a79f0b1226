/**
 * The differential test's quorum-queue profile in CI (see quorum-profile.ts): a fixed set of
 * seeds, each a chunk of sequences on the live RabbitMQ and on mqlite. Left out, as the parity
 * suite leaves the broker out, when `PARITY_TARGETS` does not name it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { checkSeed, referenceUrl, waitForBroker } from './check.js';
import { quorumSequences } from './quorum-profile.js';

const CHUNKS = 5;
const RUNS_PER_CHUNK = 20;
const FIRST_SEED = 101;
const reference = process.env.AMQP_URL ? 'amqp-url' : 'rabbitmq';
const chosen = process.env.PARITY_TARGETS?.split(',').map((name) => name.trim());
const withoutReference = chosen !== undefined && !chosen.includes(reference);

describe.skipIf(withoutReference)(
  'quorum queues on mqlite observe as on RabbitMQ, over random operation sequences',
  () => {
    beforeAll(() => waitForBroker(referenceUrl), 60_000);
    for (let i = 0; i < CHUNKS; i++) {
      const seed = FIRST_SEED + i;
      it(`seed ${seed}: ${RUNS_PER_CHUNK} sequences`, async () => {
        const agreed = await checkSeed(seed, RUNS_PER_CHUNK, referenceUrl, quorumSequences());
        expect(agreed).toBe(RUNS_PER_CHUNK);
      }, 120_000);
    }
  },
);
