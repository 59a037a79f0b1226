/**
 * A RabbitMQ definitions file, the one `rabbitmqctl export_definitions` writes, loaded into a
 * broker at startup, and the broker's topology exported in the same format, ready for
 * `rabbitmqctl import_definitions` on a real RabbitMQ.
 */
import { Broker } from 'mqlite';

await using broker = await Broker.open({
  definitions: {
    rabbit_version: '3.10.8',
    queues: [
      {
        name: 'jobs',
        vhost: '/',
        durable: true,
        auto_delete: false,
        arguments: { 'x-max-length': 1000 },
      },
    ],
    exchanges: [
      {
        name: 'work',
        vhost: '/',
        type: 'direct',
        durable: true,
        auto_delete: false,
        arguments: {},
      },
    ],
    bindings: [
      {
        source: 'work',
        vhost: '/',
        destination: 'jobs',
        destination_type: 'queue',
        routing_key: 'job',
        arguments: {},
      },
    ],
  },
});
await broker.publish('work', 'resize image 42', { routingKey: 'job' });
console.log('jobs holds', broker.queues()[0]?.messages, 'message');

await broker.fanoutExchange('audit');
await broker.bindExchange('audit', 'work', 'job');
const { queues, exchanges, bindings, rabbit_version } = broker.exportDefinitions();
console.log(JSON.stringify({ rabbit_version, queues, exchanges, bindings }, null, 2));
