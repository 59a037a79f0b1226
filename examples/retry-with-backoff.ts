/**
 * Retry with backoff on a delayed exchange: an amqplib worker that, when a job fails, publishes
 * it again to an `x-delayed-message` exchange with a growing `x-delay` (1 s, 2 s, 4 s, ...) and
 * gives up after five attempts. The worker module knows only a URL, as in production; the test
 * serves an in-process broker on a manual clock, so the minutes of backoff take no time.
 */
import amqplib from 'amqplib';
import { Broker } from 'mqlite';
import { listen } from 'mqlite/server';
import { ManualClock } from 'mqlite/testing';

const MAX_ATTEMPTS = 5;
const FIRST_DELAY_MS = 1_000;

/** The application module: a worker that runs `handle` on each job, retrying with backoff. */
async function startWorker(
  url: string,
  handle: (job: string, attempt: number) => Promise<void>,
  log: (line: string) => void,
) {
  const connection = await amqplib.connect(url);
  const channel = await connection.createConfirmChannel();
  await channel.assertExchange('jobs.retry', 'x-delayed-message', {
    arguments: { 'x-delayed-type': 'direct' },
  });
  await channel.assertQueue('jobs');
  await channel.bindQueue('jobs', 'jobs.retry', 'jobs');
  await channel.assertQueue('jobs.failed');
  await channel.prefetch(1);
  await channel.consume('jobs', async (message) => {
    if (!message) return;
    const job = message.content.toString();
    const attempt = Number(message.properties.headers?.attempt ?? 1);
    try {
      await handle(job, attempt);
      log(`${job}: done on attempt ${attempt}`);
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS) {
        log(`${job}: attempt ${attempt} failed (${(error as Error).message}), giving up`);
        channel.sendToQueue('jobs.failed', message.content, { persistent: true });
      } else {
        const delay = FIRST_DELAY_MS * 2 ** (attempt - 1);
        log(
          `${job}: attempt ${attempt} failed (${(error as Error).message}), retry in ${delay} ms`,
        );
        channel.publish('jobs.retry', 'jobs', message.content, {
          persistent: true,
          headers: { attempt: attempt + 1, 'x-delay': delay },
        });
      }
      await channel.waitForConfirms();
    }
    channel.ack(message);
  });
  return {
    async submit(job: string) {
      channel.sendToQueue('jobs', Buffer.from(job), { persistent: true });
      await channel.waitForConfirms();
    },
    close: () => connection.close(),
  };
}

// The test: the same module, pointed at mqlite on a manual clock.
const clock = new ManualClock();
const start = clock.now();
const broker = await Broker.open({ clock });
const server = await listen(broker, { port: 0 });
const outcomes = new Map<string, string>();
const worker = await startWorker(
  server.url,
  async (job, attempt) => {
    // The mail server is down for the first three attempts; the fax never works.
    if (job === 'send fax' || (job === 'send mail' && attempt <= 3)) throw new Error('unreachable');
  },
  (line) => {
    console.log(`t+${(clock.now() - start) / 1000}s ${line}`);
    const [job] = line.split(':');
    if (!line.includes('retry in')) outcomes.set(job!, line);
  },
);

const retries = () => broker.exchanges().find((e) => e.name === 'jobs.retry')?.delayed;

/** Waits (polling with a deadline) until every job is settled: done, given up or held for later. */
async function settled(jobs: number): Promise<void> {
  for (const end = Date.now() + 10_000; Date.now() < end; ) {
    const queue = broker.queues().find((q) => q.name === 'jobs');
    if (queue?.messages === 0 && outcomes.size + (retries()?.messages ?? 0) === jobs) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('the worker did not settle in 10 s');
}

await worker.submit('send mail');
await worker.submit('send fax');
await settled(2);
// Jump from each due time to the next, as the delayed exchange reports it.
for (let next = retries()?.nextDue; next !== undefined; next = retries()?.nextDue) {
  clock.setTime(next);
  await settled(2);
}
console.log('failed jobs:', broker.queues().find((q) => q.name === 'jobs.failed')?.messages);

await worker.close();
await server.close();
await broker.close();
