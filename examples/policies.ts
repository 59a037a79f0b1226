/**
 * Policies: limits set at runtime on every queue whose name matches, as an operator sets them on
 * RabbitMQ with `rabbitmqctl set_policy`, without redeclaring. They apply to existing queues at
 * once, to queues declared later, and survive a restart on fs storage.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker, fsStorage, MqliteError } from 'mqlite';
import { ManualClock } from 'mqlite/testing';

const dir = mkdtempSync(join(tmpdir(), 'mqlite-policies-'));
const clock = new ManualClock();

try {
  const broker = await Broker.open({ storage: fsStorage({ dir }), clock });
  const failed = await broker.queue('jobs.failed');
  const jobs = await broker.queue('jobs.email');
  for (const n of [1, 2, 3, 4]) await jobs.publish(`email #${n}`);

  // A length limit on a full queue drops its oldest messages at once, to the dead-letter queue.
  await broker.setPolicy('jobs-limits', {
    pattern: '^jobs\\.(?!failed$)',
    applyTo: 'queues',
    definition: {
      'max-length': 2,
      'message-ttl': 60_000,
      'dead-letter-exchange': '',
      'dead-letter-routing-key': 'jobs.failed',
    },
  });
  console.log('jobs.email holds', jobs.messageCount, '- dead-lettered:', failed.messageCount);

  // A queue declared later picks the policy up; a declared argument below it wins.
  await broker.queue('jobs.sms', { maxLength: 1 });
  for (const q of broker.queues()) {
    console.log(q.name, q.policy ?? '(no policy)', JSON.stringify(q.effectiveArguments));
  }

  // The policy's TTL applies to messages published from then on, and runs on the clock: email #5
  // pushes #3 out of the full queue, then expires; #4, published before the policy, stays.
  await jobs.publish('email #5');
  clock.advance(60_001);
  const left = [];
  for (let m = await jobs.get(); m; m = await jobs.get()) left.push(m.bodyString());
  console.log('a minute later jobs.email holds', left, '- dead-lettered:', failed.messageCount);

  // Invalid definitions are refused as RabbitMQ refuses them.
  try {
    await broker.setPolicy('typo', { pattern: '.*', definition: { 'max-lenght': 1 } as never });
  } catch (error) {
    if (error instanceof MqliteError) console.log(error.replyCode, error.message);
  }
  await broker.close();

  // Policies are stored with the broker: after a reopen they apply again.
  const again = await Broker.open({ storage: fsStorage({ dir }), clock });
  console.log(
    'after reopen:',
    again.policies().map((p) => `${p.name} ${p.pattern}`),
  );
  await again.clearPolicy('jobs-limits');
  const sms = again.queues().find((q) => q.name === 'jobs.sms');
  console.log('cleared: jobs.sms runs on', JSON.stringify(sms?.effectiveArguments));
  await again.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
