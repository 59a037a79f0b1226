/**
 * A job queue: urgent jobs first, a job that keeps failing is retried twice and then parked in a
 * dead-letter queue with its history.
 *
 * Run: npx tsx examples/job-queue.ts
 */
import { PriorityQueue, Queue } from 'mqlite';

const dead = await Queue.open({ name: 'jobs.dead' });
const jobs = await PriorityQueue.open({
  name: 'jobs',
  maxPriority: 9,
  arguments: {
    'x-delivery-limit': 2,
    'x-dead-letter-exchange': '',
    'x-dead-letter-routing-key': 'jobs.dead',
  },
  // The default exchange: the routing key names the queue.
  deadLetter: (message) =>
    message.routingKey === dead.name ? dead.publishMessage(message) : undefined,
});

await jobs.publish({ job: 'send newsletter' }, { priority: 1 });
await jobs.publish({ job: 'resize image' }, { priority: 5 });
await jobs.publish({ job: 'corrupt upload' }, { priority: 5 });
await jobs.publish({ job: 'charge card' }, { priority: 9 });
console.log(`queued ${jobs.messageCount} jobs`);

let done = 0;
const worker = await jobs.subscribe({ prefetch: 1 }, (message) => {
  const { job } = message.json<{ job: string }>();
  const attempt = Number(message.properties.headers?.['x-delivery-count'] ?? 0) + 1;
  console.log(`priority ${message.properties.priority}: ${job} (attempt ${attempt})`);
  // Throwing nacks the message with requeue; past x-delivery-limit it is dead-lettered.
  if (job === 'corrupt upload') throw new Error('cannot read the upload');
  done++;
});

const parked = await dead.consumeOne({ timeout: 5000 });
const deaths = (parked.properties.headers?.['x-death'] ?? []) as {
  reason: string;
  queue: string;
}[];
const { job } = parked.json<{ job: string }>();
console.log(`dead-lettered: ${job} (${deaths[0]?.reason} in '${deaths[0]?.queue}')`);
console.log(`completed ${done} jobs, ${jobs.messageCount} left`);

await worker.cancel();
await jobs.close();
await dead.close();
