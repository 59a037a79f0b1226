import type { Scenario } from '../types.js';
import { classicScenarios } from './classic.js';
import { consistentHashScenarios } from './consistent-hash.js';
import { consumerScenarios } from './consumers.js';
import { deadLetterScenarios } from './dead-letter.js';
import { deadLetterConsumerScenarios } from './dead-letter-consumers.js';
import { deadLetterLoopScenarios } from './dead-letter-loops.js';
import { deduplicationScenarios } from './deduplication.js';
import { delayedScenarios } from './delayed.js';
import { exchangeBindingScenarios } from './exchange-bindings.js';
import { exchangeScenarios } from './exchanges.js';
import { maxLengthScenarios } from './max-length.js';
import { mqliteOnlyScenarios } from './mqlite-only.js';
import { policyScenarios } from './policies.js';
import { priorityScenarios } from './priority.js';
import { quorumScenarios } from './quorum.js';
import { streamScenarios } from './streams.js';

/**
 * Where LavinMQ 2.9.1 itself differs from RabbitMQ 3.10, for scenarios that follow RabbitMQ: they
 * are listed as skipped on the `lavinmq` target, with what differs.
 */
const LAVINMQ_DIFFERS: Readonly<Record<string, string>> = {
  'a queue name starting with amq. is refused with 403': 'accepts amq. queue names',
  'deleting an exchange removes the bindings to it; an auto-delete source goes with its last binding':
    'error wording',
  'binding to or from a missing exchange is 404, from the default exchange 403': 'error wording',
  'a CC header that is not an array of strings is refused with 406': 'error wording',
  'a rejected message with CC is dead-lettered by its key and CC, or by the dead-letter routing key alone (CC dropped)':
    'keeps CC on a message dead-lettered with a dead-letter routing key',
  'a priority above x-max-priority counts as the maximum': 'does not cap priorities',
  'stream consumers waiting at the end of a stream each get every new message at once':
    'a publish sometimes wakes one of two waiting stream consumers; the other gets it at the next publish',
  'x-max-length-bytes drops by body bytes, dead-lettering with reason maxlen (maxlenbytes on mqlite)':
    'counts message bytes differently',
  'x-overflow reject-publish-dlx refuses the new message and dead-letters it':
    'does not dead-letter a refused publish',
  'a topic exchange matches * as one word and # as zero or more, empty words included':
    'empty topic words',
  'a headers exchange matches x-match all, any, all-with-x and any-with-x as RabbitMQ does':
    'headers all-with-x',
  'an invalid x-match is refused with 406': 'error wording',
  'redeclaring an exchange differently fails with 406 naming the argument': 'error wording',
  'redeclaring a queue differently fails with 406 naming the first argument in RabbitMQ order':
    'error wording',
  'exchange names are checked: missing 404, amq.* and the default exchange 403':
    'exchange name checks',
  'deleting the default exchange or any amq. name, a missing one too, is refused with 403':
    'error wording',
  'deleting an exchange: ifUnused refuses while bound; publishing to a deleted one fails with 404':
    'exchange deletion checks',
  "a deleted queue's handle: a publish is unroutable (dropped, 312 with mandatory), get is 404":
    'error wording',
  'a single active consumer whose connection goes hands its unacked message over first, then newer ones':
    'single active consumer hand-over order',
  'round-robin goes on from the consumer after the last served; a consumer found full rejoins at the back once it has room':
    'round-robin order',
  'a message requeued by a full consumer goes to the next in the rotation, not back to it':
    'round-robin order',
  'a requeue counts against x-max-length-bytes (reason maxlen; maxlenbytes on mqlite)':
    'byte limits',
  'with x-overflow reject-publish a requeue may exceed the limit': 'requeue and length limits',
  'a message with expiration 0 that no byte limit admits is dropped by the limit (reason maxlen; maxlenbytes on mqlite)':
    'byte limits',
  'messages a closing consumer returns come back together before drop-head applies (a priority queue drops the highest first)':
    'requeue and length limits',
  'a multiple reject on a priority queue dead-letters the highest priority first':
    'dead-letter order',
  'messages of a priority queue that expire at the same moment are dead-lettered highest priority first':
    'dead-letter order',
  'a nack requeues into a loop of full queues: the head goes round once, to the consumer that has room':
    'requeue and length limits',
  "a closing connection's requeue into a loop of full queues drops m7 into the full queue once":
    'requeue and length limits',
  'a requeue into a loop of three full queues pushes one head out of each':
    'requeue and length limits',
  'a requeue delivers to a consumer with room before what it dead-letters round a loop comes back':
    'requeue and length limits',
  'an expired message requeued into a full queue is dead-lettered by the limit, not its TTL (reason maxlen; maxlenbytes on mqlite for the byte limit)':
    'requeue and length limits',
  'a message published right after a requeue to an empty queue goes to the consumer with room, whatever the limit':
    'requeue and length limits',
  // Run there, it leaves the broker spinning a core for good and every later scenario times out.
  'a consumer freed by a reject rejoins the line before what the reject dead-letters comes back':
    'dead-letters round a loop of full queues without end once reject-publish-dlx refuses',
};

const all: readonly Scenario[] = [
  ...classicScenarios,
  ...priorityScenarios,
  ...consumerScenarios,
  ...deadLetterScenarios,
  ...deadLetterLoopScenarios,
  ...deadLetterConsumerScenarios,
  ...maxLengthScenarios,
  ...exchangeScenarios,
  ...exchangeBindingScenarios,
  ...consistentHashScenarios,
  ...deduplicationScenarios,
  ...streamScenarios,
  ...policyScenarios,
  ...quorumScenarios,
  ...mqliteOnlyScenarios,
  ...delayedScenarios,
];

for (const name of Object.keys(LAVINMQ_DIFFERS)) {
  if (!all.some((s) => s.name === name))
    throw new Error(`LAVINMQ_DIFFERS names no scenario: ${name}`);
}

/** Every parity scenario, in the order they run. */
export const scenarios: readonly Scenario[] = all.map((scenario) => {
  const differs = LAVINMQ_DIFFERS[scenario.name];
  return differs === undefined
    ? scenario
    : { ...scenario, differsOn: { ...scenario.differsOn, lavinmq: differs } };
});
