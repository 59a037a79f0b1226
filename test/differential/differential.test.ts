/**
 * The randomized differential test in CI: a fixed set of seeds, each a chunk of sequences run on
 * the live RabbitMQ and on mqlite (see check.ts). `npm run differential -- --seeds N` runs more.
 * Left out, as the parity suite leaves the broker out, when `PARITY_TARGETS` does not name it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { checkSeed, referenceUrl, waitForBroker } from './check.js';

const CHUNKS = 10;
const RUNS_PER_CHUNK = 20;
const FIRST_SEED = 1;
const reference = process.env.AMQP_URL ? 'amqp-url' : 'rabbitmq';
const chosen = process.env.PARITY_TARGETS?.split(',').map((name) => name.trim());
const withoutReference = chosen !== undefined && !chosen.includes(reference);

describe.skipIf(withoutReference)(
  'mqlite observes as RabbitMQ does, over random operation sequences',
  () => {
    beforeAll(() => waitForBroker(referenceUrl), 60_000);
    for (let i = 0; i < CHUNKS; i++) {
      const seed = FIRST_SEED + i;
      it(`seed ${seed}: ${RUNS_PER_CHUNK} sequences`, async () => {
        // A mismatch fails inside, shrunk and with both traces; every sequence must have agreed.
        expect(await checkSeed(seed, RUNS_PER_CHUNK)).toBe(RUNS_PER_CHUNK);
      }, 120_000);
    }
  },
);
