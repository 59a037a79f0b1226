/**
 * A producer process: publishes `count` persistent messages to `queue` at `url` with publisher
 * confirms, ids `0` to `count - 1`, and writes each id on a line of stdout once confirmed. The
 * first half goes at once; the rest after a line on stdin, so a test can restart the server in
 * between. A connection lost with publishes unconfirmed is reopened and they are sent again
 * (at-least-once). Exits 0 once every message is confirmed.
 *
 *   node --import tsx producer.ts <url> <queue> <count>
 */
import { once } from 'node:events';
import amqplib from 'amqplib';

const [url, queue, countArg] = process.argv.slice(2) as [string, string, string];
const count = Number(countArg);
const RETRY_MS = 50;
const BATCH = 20;

let channel: amqplib.ConfirmChannel | undefined;

async function open(): Promise<amqplib.ConfirmChannel> {
  for (;;) {
    try {
      const connection = await amqplib.connect(url);
      connection.on('error', () => {});
      const opened = await connection.createConfirmChannel();
      connection.once('close', () => {
        if (channel === opened) channel = undefined;
      });
      opened.on('error', () => {});
      await opened.assertQueue(queue, { durable: true });
      return opened;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}

/** Publishes `ids` until every one is confirmed. */
async function publish(ids: readonly number[]): Promise<void> {
  let at = 0;
  while (at < ids.length) {
    const batch = ids.slice(at, at + BATCH);
    try {
      channel ??= await open();
      for (const id of batch) {
        channel.sendToQueue(queue, Buffer.from(`job ${id}`), {
          persistent: true,
          messageId: String(id),
        });
      }
      await channel.waitForConfirms();
      process.stdout.write(batch.map((id) => `${id}\n`).join(''));
      at += batch.length;
    } catch {
      // Lost before the batch was confirmed: send it again on a new connection.
      channel = undefined;
    }
  }
}

const ids = Array.from({ length: count }, (_, i) => i);
const half = Math.floor(count / 2);
await publish(ids.slice(0, half));
process.stdin.setEncoding('utf8');
await once(process.stdin, 'data');
await publish(ids.slice(half));
process.exit(0);
