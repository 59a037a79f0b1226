/**
 * What the client tests share: a memory broker served on a free port for the tests of a file,
 * and the targets they run against (that server, and the local RabbitMQ unless
 * `PARITY_TARGETS=mqlite`).
 */
import { afterAll, beforeAll } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { type AmqpServer, listen } from '../../src/server/server.js';

export const rabbitUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const onlyMqlite = process.env.PARITY_TARGETS === 'mqlite';

/** The broker and its server, set before the file's tests run (`server` may be replaced). */
export interface Served {
  broker: Broker;
  server: AmqpServer;
}

/** Opens a broker and serves it before the tests; closes both after them. */
export function servedBroker(): Served {
  const served = {} as Served;
  beforeAll(async () => {
    served.broker = await Broker.open();
    served.server = await listen(served.broker);
  });
  afterAll(async () => {
    await served.server.close();
    await served.broker.close();
  });
  return served;
}

/** The server of `served` and the local RabbitMQ, as targets of `describe.each`. */
export function wireTargets(served: Served): { name: string; url: () => string }[] {
  return [
    { name: 'mqlite server', url: () => served.server.url },
    ...(onlyMqlite ? [] : [{ name: 'rabbitmq', url: () => rabbitUrl }]),
  ];
}
