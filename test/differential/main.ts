/**
 * `npm run differential -- --seeds N [--seed S]`: runs N random sequences (in chunks of 50, seeds
 * S, S+1, ...) on the broker at `AMQP_URL` (default the local RabbitMQ) and on mqlite, printing
 * the shrunk sequence and both traces of the first difference.
 */
import { parseArgs } from 'node:util';
import { checkSeed, referenceUrl, waitForBroker } from './check.js';

const CHUNK = 50;
const { values } = parseArgs({
  options: { seeds: { type: 'string', default: '500' }, seed: { type: 'string', default: '1000' } },
});
const total = Number(values.seeds);
const first = Number(values.seed);
if (!Number.isSafeInteger(total) || total < 1 || !Number.isSafeInteger(first)) {
  console.error('usage: npm run differential -- --seeds N [--seed S]');
  process.exit(2);
}
await waitForBroker(referenceUrl);
const started = Date.now();
for (let done = 0, seed = first; done < total; done += CHUNK, seed++) {
  const runs = Math.min(CHUNK, total - done);
  try {
    await checkSeed(seed, runs);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
  console.log(
    `seed ${seed}: ${runs} sequences agree (${done + runs}/${total}, ${Math.round((Date.now() - started) / 1000)} s)`,
  );
}
