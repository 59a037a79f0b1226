/**
 * An amqplib module tested unchanged against mqlite's AMQP server: the module knows only a URL,
 * as in production; the test serves an in-process broker on a manual clock, so a one-minute
 * message TTL expires without waiting.
 */
import amqplib from 'amqplib';
import { Broker } from 'mqlite';
import { listen } from 'mqlite/server';
import { ManualClock } from 'mqlite/testing';

/** The application module: reminders that expire into a dead-letter queue after a minute. */
async function reminderService(url: string) {
  const connection = await amqplib.connect(url);
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue('reminders.expired');
  await channel.assertQueue('reminders', {
    messageTtl: 60_000,
    deadLetterExchange: '',
    deadLetterRoutingKey: 'reminders.expired',
  });
  return {
    async remind(text: string) {
      channel.sendToQueue('reminders', Buffer.from(text), { persistent: true });
      await channel.waitForConfirms();
    },
    pending: async () => (await channel.checkQueue('reminders')).messageCount,
    async nextExpired() {
      const message = await channel.get('reminders.expired', { noAck: true });
      if (!message) return null;
      return `${message.content.toString()} (${message.properties.headers?.['x-death']?.[0]?.reason})`;
    },
    close: () => connection.close(),
  };
}

// The test: the same module, pointed at mqlite.
const clock = new ManualClock();
const broker = await Broker.open({ clock });
const server = await listen(broker, { port: 0 });
const service = await reminderService(server.url);

await service.remind('call Alice');
console.log('pending:', await service.pending());
clock.advance(60_000); // a minute passes, instantly
console.log('pending a minute later:', await service.pending());
console.log('expired:', await service.nextExpired());

await service.close();
await server.close();
await broker.close();
