/**
 * One client process of the aggregate load in server-cpu.ts: `publish` sends `n` 100-byte
 * messages to a queue (confirms off, waiting for the socket to drain), `consume` takes `n` from
 * it with acks at prefetch 1000. Connects, sends 'ready', starts on 'go', sends 'done', exits.
 */
import amqplib from 'amqplib';
import { BODY, WINDOW } from './clients.js';

const [role, url, queue, count] = process.argv.slice(2) as [string, string, string, string];
const n = Number(count);
const connection = await amqplib.connect(url, { noDelay: true });
const channel = await connection.createChannel();
await channel.prefetch(WINDOW);
const go = new Promise((resolve) => process.once('message', resolve));
process.send!('ready');
await go;
if (role === 'publish') {
  for (let i = 0; i < n; i++) {
    if (!channel.sendToQueue(queue, BODY)) {
      await new Promise((resolve) => channel.once('drain', resolve));
    }
  }
  // A round trip after the last publish: the server has read them all.
  await channel.checkQueue(queue);
} else {
  let received = 0;
  await new Promise<void>((resolve) => {
    void channel.consume(queue, (message) => {
      if (!message) return;
      channel.ack(message);
      if (++received === n) resolve();
    });
  });
}
process.send!('done');
await connection.close();
process.disconnect();
