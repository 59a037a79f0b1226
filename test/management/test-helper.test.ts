/**
 * A test helper as suites written for RabbitMQ carry it (plain `fetch` of the management API:
 * read a queue's depth, purge it between tests), run unchanged against mqlite.
 */
import amqplib from 'amqplib';
import { describe, expect, it } from 'vitest';
import { managedBroker } from './served.js';

/** The helper, as written for RabbitMQ: a base URL with credentials in it. */
function rabbitHelper(managementUrl: string) {
  const url = new URL(managementUrl);
  const auth = `Basic ${btoa(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`)}`;
  const base = `${url.protocol}//${url.host}/api`;
  const vhost = encodeURIComponent('/');
  return {
    async depth(queue: string): Promise<number> {
      const response = await fetch(`${base}/queues/${vhost}/${encodeURIComponent(queue)}`, {
        headers: { Authorization: auth },
      });
      if (!response.ok) throw new Error(`queue ${queue}: HTTP ${response.status}`);
      const { messages } = (await response.json()) as { messages: number };
      return messages;
    },
    async purge(queue: string): Promise<void> {
      const response = await fetch(
        `${base}/queues/${vhost}/${encodeURIComponent(queue)}/contents`,
        {
          method: 'DELETE',
          headers: { Authorization: auth },
        },
      );
      if (response.status !== 204) throw new Error(`purge ${queue}: HTTP ${response.status}`);
    },
  };
}

const managed = managedBroker();

describe('a RabbitMQ test helper against mqlite', () => {
  it('reads the depth an application left and purges it', async () => {
    const url = new URL(managed.server.managementUrl!);
    url.username = 'guest';
    url.password = 'guest';
    const helper = rabbitHelper(url.href);
    const connection = await amqplib.connect(managed.server.url);
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue('orders');
    for (let i = 0; i < 4; i++) channel.sendToQueue('orders', Buffer.from(`order ${i}`));
    await channel.waitForConfirms();
    expect(await helper.depth('orders')).toBe(4);
    await helper.purge('orders');
    expect(await helper.depth('orders')).toBe(0);
    await expect(helper.depth('no-such-queue')).rejects.toThrow('HTTP 404');
    await connection.close();
  });
});
