/**
 * A served broker with its management HTTP API: publish over AMQP, then read the queue's depth,
 * peek at its messages and purge it over HTTP, add a user who may only read, as a RabbitMQ test
 * helper or an operator's script does against RabbitMQ's management plugin.
 */
import amqplib from 'amqplib';
import { Broker } from 'mqlite';
import { listen } from 'mqlite/server';

await using broker = await Broker.open();
// Port 0: a free port each. `mqlite serve --management-port 15672` does the same from a shell.
await using server = await listen(broker, { port: 0, management: { port: 0 } });

const connection = await amqplib.connect(server.url);
const channel = await connection.createConfirmChannel();
await channel.assertQueue('jobs');
for (const job of ['resize', 'thumbnail', 'upload']) channel.sendToQueue('jobs', Buffer.from(job));
await channel.waitForConfirms();

const headers = {
  authorization: `Basic ${btoa('guest:guest')}`,
  'content-type': 'application/json',
};
const api = (method: string, path: string, body?: unknown) =>
  fetch(`${server.managementUrl}/api${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

const queue = (await (await api('GET', '/queues/%2F/jobs')).json()) as { messages: number };
console.log(`jobs holds ${queue.messages} messages`);

// A requeueing get: the messages stay in the queue.
const peeked = (await (
  await api('POST', '/queues/%2F/jobs/get', {
    count: 2,
    ackmode: 'ack_requeue_true',
    encoding: 'auto',
  })
).json()) as { payload: string }[];
console.log(`the first two: ${peeked.map((m) => m.payload).join(', ')}`);

const purged = await api('DELETE', '/queues/%2F/jobs/contents');
const after = (await (await api('GET', '/queues/%2F/jobs')).json()) as { messages: number };
console.log(`purged (HTTP ${purged.status}): jobs holds ${after.messages} messages`);

const metrics = await (await fetch(`${server.managementUrl}/metrics`)).text();
console.log(metrics.split('\n').find((line) => line.startsWith('rabbitmq_queues ')));

// A user who may read every queue and change none: the server's users change while it runs.
await api('PUT', '/users/reporter', { password: 's3cret', tags: 'monitoring' });
await api('PUT', '/permissions/%2F/reporter', { configure: '', write: '', read: '.*' });
const reporter = await amqplib.connect(server.url.replace('guest:guest@', 'reporter:s3cret@'));
const readOnly = await reporter.createChannel();
readOnly.on('error', () => {});
console.log(`reporter sees jobs: ${(await readOnly.checkQueue('jobs')).queue}`);
await readOnly.assertQueue('reports').catch((error: Error) => console.log(error.message));
const closed = new Promise<Error>((resolve) => reporter.on('close', resolve));
await api('DELETE', '/users/reporter');
console.log(`on delete: ${(await closed).message}`);

await connection.close();
