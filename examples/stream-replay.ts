/**
 * A stream on disk: offsets, replay from any point, server-side offset tracking, and resuming
 * after a restart.
 *
 * Run: `npx tsx examples/stream-replay.ts`
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Message } from 'mqlite';
import { fsStorage, StreamQueue } from 'mqlite';

const dir = mkdtempSync(join(tmpdir(), 'mqlite-stream-replay-'));

/** Opens the "orders" stream; a second call after closing is a process restart. */
async function openOrders() {
  const storage = fsStorage({ dir });
  const stream = await StreamQueue.open({
    name: 'orders',
    storage,
    // Tiny segments so that 'last' (the newest segment) shows: a few messages each.
    arguments: { 'x-max-age': '7D', 'x-stream-max-segment-size-bytes': 200 },
  });
  return { storage, stream };
}

const offsetOf = (m: Message) => m.properties.headers?.['x-stream-offset'];

/** Subscribes, collects what arrives in one turn of the event loop, then cancels. */
async function take(stream: StreamQueue, params: Parameters<StreamQueue['subscribe']>[0]) {
  const got: Message[] = [];
  const sub = await stream.subscribe(params, (m) => {
    got.push(m);
  });
  await new Promise((resolve) => setImmediate(resolve));
  await sub.cancel();
  return got;
}

try {
  let { storage, stream } = await openOrders();

  // Publish ten orders; each gets the next offset, starting at 1.
  const before = new Date();
  for (let i = 1; i <= 10; i++) await stream.publish({ order: i, total: i * 10 });
  console.log(`published offsets ${stream.firstOffset}..${stream.nextOffset - 1}`);

  // Where a consumer starts is its choice: x-stream-offset.
  for (const start of ['first', 'last', 8, -3, before] as const) {
    const got = await take(stream, { args: { 'x-stream-offset': start } });
    const label =
      start instanceof Date
        ? 'a Date before the first publish'
        : start === 'last'
          ? '"last" (the newest segment: 3 messages fit in one)'
          : JSON.stringify(start);
    console.log(`x-stream-offset ${label}: offsets ${got.map(offsetOf).join(', ')}`);
  }

  // A named consumer tracks its progress on the server: the stored offset is the first message
  // it has not acknowledged. It acknowledges orders 1-4, and receives 5 without acking it.
  const worker = await stream.subscribe({ tag: 'billing', prefetch: 5, manualAck: true }, (m) => {
    if (m.json<{ order: number }>().order <= 4) void m.ack();
  });
  await new Promise((resolve) => setImmediate(resolve));
  await worker.cancel();
  console.log(
    `billing stored offset: ${stream.storedOffset('billing')} (5 was delivered, never acked)`,
  );

  // Restart: close everything and open the same directory again.
  await stream.close();
  await storage.close();
  ({ storage, stream } = await openOrders());
  console.log(
    `after restart: ${stream.messageCount} messages, offsets ${stream.firstOffset}..${stream.nextOffset - 1}, billing at ${stream.storedOffset('billing')}`,
  );

  // The billing consumer resumes where it left off, order 5 included.
  const resumed = await take(stream, { tag: 'billing' });
  console.log(
    `billing resumes with orders ${resumed.map((m) => m.json<{ order: number }>().order).join(', ')}`,
  );

  // A plain replay tracks nothing: read() yields stored entries with their offsets.
  let sum = 0;
  for await (const entry of stream.read(-4)) {
    sum += JSON.parse(new TextDecoder().decode(entry.message.body)).total;
  }
  console.log(`read(-4): total of the last four orders = ${sum}`);

  await stream.close();
  await storage.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
