import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { type AmqpServer, listen } from '../../src/server/server.js';
import { answersAmqp, brokersNeeded } from './brokers-answer.js';

describe('the check that the brokers a test run needs answer', () => {
  let broker: Broker;
  let server: AmqpServer;
  let notAmqp: Server;
  beforeAll(async () => {
    broker = await Broker.open();
    server = await listen(broker, { port: 0 });
    notAmqp = createServer((socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    await new Promise<void>((resolve) => notAmqp.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    notAmqp.close();
    await server.close();
    await broker.close();
  });

  it('tells an AMQP server from a closed port and from another protocol', async () => {
    expect(await answersAmqp(server.url)).toBe(true);
    const port = (notAmqp.address() as { port: number }).port;
    expect(await answersAmqp(`amqp://127.0.0.1:${port}`)).toBe(false);
    notAmqp.close();
    expect(await answersAmqp(`amqp://127.0.0.1:${port}`)).toBe(false);
  });

  it('needs RabbitMQ for the parity files, unless PARITY_TARGETS leaves it out', () => {
    const parity = ['test/parity/parity.test.ts', 'test/errors.test.ts'];
    expect(brokersNeeded({}, parity).map((b) => b.name)).toEqual(['rabbitmq']);
    expect(brokersNeeded({ PARITY_TARGETS: 'mqlite' }, parity)).toEqual([]);
    expect(brokersNeeded({}, ['test/errors.test.ts'])).toEqual([]);
    expect(
      brokersNeeded({ LAVINMQ_URL: 'amqp://h:5680', PARITY_TARGETS: 'mqlite,lavinmq' }, parity),
    ).toEqual([{ name: 'lavinmq', url: 'amqp://h:5680' }]);
  });

  it('stops a run without its broker with one message saying how to run without it', () => {
    const { PARITY_TARGETS: _, ...env } = process.env;
    const run = spawnSync(
      process.execPath,
      ['node_modules/vitest/vitest.mjs', 'run', 'test/parity/definitions.test.ts'],
      {
        encoding: 'utf8',
        env: { ...env, AMQP_URL: 'amqp://guest:guest@127.0.0.1:1' },
        timeout: 100_000,
      },
    );
    const printed = run.stdout + run.stderr;
    expect(run.status).not.toBe(0);
    expect(printed).toContain('No broker answers: amqp-url at amqp://guest:***@127.0.0.1:1');
    expect(printed).toContain('PARITY_TARGETS=mqlite npm test');
    expect(printed).not.toMatch(/Tests +\d+ failed/);
  });
});
