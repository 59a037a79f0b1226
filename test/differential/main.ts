/**
 * `npm run differential -- --seeds N [--seed S] [--profile P] [--unshrunk]`: runs N random
 * sequences (in chunks of 50, seeds S, S+1, ...) of profile P (`basic`, `dead-letter`, `time` or
 * `all`, which takes them in turn, chunk by chunk) on the broker at `AMQP_URL` (default the local
 * RabbitMQ) and on mqlite, printing each chunk's first difference with the traces, shrunk unless
 * `--unshrunk`, where a sequence set aside as the documented `x-death` order parted, and what a
 * sequence set aside as the documented drop-head dead-letter order left in the DLQ. It goes
 * on past a difference, to the next chunk, and exits non-zero at the end if there was one.
 */
import { parseArgs } from 'node:util';
import { checkSeed, referenceUrl, waitForBroker } from './check.js';
import { PROFILES, type Profile } from './profiles.js';

const CHUNK = 50;
const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '500' },
    seed: { type: 'string', default: '1000' },
    profile: { type: 'string', default: 'basic' },
    unshrunk: { type: 'boolean', default: false },
  },
});
const total = Number(values.seeds);
const first = Number(values.seed);
const profiles = values.profile === 'all' ? PROFILES : PROFILES.filter((p) => p === values.profile);
if (!Number.isSafeInteger(total) || total < 1 || !Number.isSafeInteger(first) || !profiles[0]) {
  console.error(
    `usage: npm run differential -- --seeds N [--seed S] [--profile ${PROFILES.join('|')}|all] [--unshrunk]`,
  );
  process.exit(2);
}
await waitForBroker(referenceUrl);
const started = Date.now();
let raced = 0;
let deathOrder = 0;
let dropOrder = 0;
let differed = 0;
for (let done = 0, seed = first; done < total; done += CHUNK, seed++) {
  const runs = Math.min(CHUNK, total - done);
  const profile: Profile = profiles[(seed - first) % profiles.length]!;
  let outcome: string;
  try {
    const result = await checkSeed(seed, runs, profile, { shrink: !values.unshrunk });
    raced += result.raced;
    deathOrder += result.deathOrder.length;
    dropOrder += result.dropOrder.length;
    for (const parted of result.deathOrder) console.log(`seed ${seed}: x-death order: ${parted}`);
    for (const dlq of result.dropOrder) console.log(`seed ${seed}: drop-head order: ${dlq}`);
    outcome = `${result.agreed} sequences agree, ${result.raced} raced a TTL, ${result.deathOrder.length} x-death order, ${result.dropOrder.length} drop-head order`;
  } catch (error) {
    differed++;
    console.error(`seed ${seed} (${profile}):`, (error as Error).message);
    outcome = 'a difference (above)';
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  console.log(
    `seed ${seed} (${profile}): ${outcome} (${done + runs}/${total}, ${differed} chunks differed, ${raced} raced, ${deathOrder} x-death order, ${dropOrder} drop-head order, ${seconds} s)`,
  );
}
process.exit(differed > 0 ? 1 : 0);
