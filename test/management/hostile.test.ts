/**
 * Hostile HTTP input: answered with clear errors, and the AMQP side keeps serving.
 */
import { request } from 'node:http';
import amqplib from 'amqplib';
import { afterAll, describe, expect, it } from 'vitest';
import { api, basic, managedBroker } from './served.js';

const managed = managedBroker();
const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  api(managed.server.managementUrl!, method, path, body, headers);

/** A request sent as written: fetch would normalise `..` and refuse odd bodies. */
function raw(method: string, path: string, body = '', headers: Record<string, string> = {}) {
  const url = new URL(managed.server.managementUrl!);
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: { authorization: basic('guest', 'guest'), ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('hostile HTTP input', () => {
  afterAll(async () => {
    // Whatever came before, AMQP clients still work.
    const connection = await amqplib.connect(managed.server.url);
    const channel = await connection.createChannel();
    await channel.assertQueue('still-fine', { durable: false });
    channel.sendToQueue('still-fine', Buffer.from('ok'));
    const got = await new Promise<amqplib.GetMessage | false>((resolve) =>
      setImmediate(() => resolve(channel.get('still-fine', { noAck: true }))),
    );
    expect(got && got.content.toString()).toBe('ok');
    await connection.close();
  });

  it('answers bad JSON and JSON that is no object with 400 not_json', async () => {
    for (const body of ['{bad', '[1,2]', '"text"', 'null']) {
      const answer = await call('PUT', '/api/queues/%2F/hostile-json', body);
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({ error: 'bad_request', reason: 'not_json' });
    }
  });

  it('refuses prototype keys anywhere in a body', async () => {
    const answer = await call(
      'PUT',
      '/api/queues/%2F/hostile-proto',
      '{"durable":false,"arguments":{"__proto__":{"polluted":true}}}',
    );
    expect(answer.status).toBe(400);
    expect(answer.json.reason).toBe("key '__proto__' is not allowed");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await call('GET', '/api/queues/%2F/hostile-proto')).status).toBe(404);
  });

  it('answers a body past the size limit with 413', async () => {
    const huge = `{"payload":"${'x'.repeat(11 * 1024 * 1024)}"}`;
    const answer = await raw('POST', '/api/exchanges/%2F/amq.default/publish', huge, {
      'content-type': 'application/json',
    });
    expect(answer.status).toBe(413);
  });

  it('keeps %2F inside a name and lets no .. climb out of one', async () => {
    expect((await call('PUT', '/api/queues/%2F/a%2Fb', { durable: false })).status).toBe(201);
    expect((await call('GET', '/api/queues/%2F/a%2Fb')).json.name).toBe('a/b');
    expect((await raw('GET', '/api/queues/%2F/..%2F..%2Fetc%2Fpasswd')).status).toBe(404);
    expect((await raw('GET', '/api/queues/../../etc/passwd')).status).toBe(404);
    expect((await raw('GET', '/api/queues/%2F/%E0%A4%A')).status).toBe(404);
    expect((await raw('GET', '/../../etc/passwd')).status).toBe(404);
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const answer = await call('PATCH', '/api/queues/%2F/x');
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('HEAD, GET, PUT, DELETE, OPTIONS');
    expect((await call('POST', '/api/overview')).status).toBe(405);
  });

  it('answers no or malformed credentials with 401 before anything is read', async () => {
    for (const authorization of ['', 'Bearer x', 'Basic !!!', `Basic ${btoa('nocolon')}`]) {
      const answer = await call('DELETE', '/api/queues/%2F/still-fine', undefined, {
        authorization,
      });
      expect(answer.status).toBe(401);
    }
  });

  it('answers wrong field types with 400 naming the field', async () => {
    const answer = await call('PUT', '/api/queues/%2F/typed', { durable: 'yes' });
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ error: 'bad_request', reason: 'durable must be a boolean' });
    const publish = await call('POST', '/api/exchanges/%2F/amq.default/publish', {
      routing_key: 'x',
      payload: 'p',
      payload_encoding: 'rot13',
    });
    expect(publish.status).toBe(400);
  });
});
