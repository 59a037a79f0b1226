/**
 * Queues declared from a JSON config when the broker opens, as a Qpid virtual host reads its
 * config, on durable fs storage: reopening the broker brings them back with their messages.
 * A config that contradicts what is stored fails with an error naming the queue and argument.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker, fsStorage, MqliteError } from 'mqlite';

const deadLetters = { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'jobs.failed' };
const dir = mkdtempSync(join(tmpdir(), 'mqlite-config-'));
const config = join(dir, 'mqlite.json');
writeFileSync(
  config,
  JSON.stringify({
    queues: {
      jobs: {
        maxPriority: 9,
        arguments: deadLetters,
      },
      'jobs.failed': {},
      prices: { type: 'lvq', lvqKey: 'ISIN' },
      events: { type: 'stream', maxAge: '7D' },
    },
  }),
);

try {
  const broker = await Broker.open({ storage: fsStorage({ dir: join(dir, 'data') }), config });
  for (const q of broker.queues()) console.log(`declared ${q.name} (${q.kind})`);
  const jobs = await broker.queue('jobs', { passive: true });
  await jobs.publish('rebuild index', { priority: 5 });
  await broker.close();

  // Reopen on the same directory: declarations and messages are back.
  const again = await Broker.open({ storage: fsStorage({ dir: join(dir, 'data') }), config });
  const reopened = await again.queue('jobs', { passive: true });
  console.log('after reopen, jobs holds:', (await reopened.get())?.bodyString());
  await again.close();

  // A config that disagrees with the stored declaration is refused, and nothing changes.
  writeFileSync(
    config,
    JSON.stringify({ queues: { jobs: { maxPriority: 3, arguments: deadLetters } } }),
  );
  try {
    await Broker.open({ storage: fsStorage({ dir: join(dir, 'data') }), config });
  } catch (error) {
    if (!(error instanceof MqliteError)) throw error;
    // The message names the config file; its temporary directory is shortened to <dir> here.
    const message = error.message.replace(dir, '<dir>');
    console.log(`refused (${error.code}, ${error.replyCode}): ${message}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
