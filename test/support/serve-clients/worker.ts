/**
 * A worker process: consumes `queue` at `url` with amqplib and, for each message, writes its
 * message id on a line of stdout, then acks it. It reconnects whenever the connection goes (a
 * server restart) and prints `ready` each time it consumes again. Runs until killed.
 *
 *   node --import tsx worker.ts <url> <queue>
 */
import amqplib from 'amqplib';

const [url, queue] = process.argv.slice(2) as [string, string];
/** Between attempts to reach a server that is restarting. */
const RETRY_MS = 50;

async function connect(): Promise<amqplib.ChannelModel> {
  for (;;) {
    try {
      return await amqplib.connect(url);
    } catch {
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}

for (;;) {
  const connection = await connect();
  const gone = new Promise((resolve) => connection.once('close', resolve));
  connection.on('error', () => {});
  try {
    const channel = await connection.createChannel();
    channel.on('error', () => {});
    await channel.assertQueue(queue, { durable: true });
    await channel.prefetch(10);
    await channel.consume(queue, (message) => {
      if (!message) return;
      // Recorded before the ack: a message acked is always a message seen.
      process.stdout.write(`${message.properties.messageId}\n`);
      try {
        channel.ack(message);
      } catch {
        // The channel closed meanwhile: the message comes again.
      }
    });
    process.stdout.write('ready\n');
  } catch {
    // The server went during the setup: connect again.
  }
  await gone;
}
