/**
 * The ends of a shovel on another broker, over AMQP 0-9-1 with `@cloudamqp/amqp-client`, loaded
 * here at the first connection so that no process that never shovels loads it. A destination
 * publishes in confirm mode under `on-confirm` (each publish resolves on the broker's ack), and
 * holds its publishes while the broker has the connection blocked; a source consumes with the
 * shovel's prefetch, which bounds the messages in flight.
 */
import type { AMQPChannel, AMQPClient, AMQPProperties } from '@cloudamqp/amqp-client';
import type { MessageProperties } from '../message/types.js';
import {
  type Destination,
  type DestinationSpec,
  OFFSET_HEADER,
  type OnFailure,
  type Source,
  type SourceSpec,
} from './endpoint.js';
import { clientOptions } from './uri.js';

/**
 * Connects to `uri` (`amqp://` or `amqps://`, credentials, vhost and query parameters as
 * RabbitMQ reads them: see `uri.ts`).
 */
async function connect(uri: string, name: string, onFailure: OnFailure) {
  const { AMQPClient } = await import('@cloudamqp/amqp-client');
  const { url, tls } = clientOptions(uri, name);
  const client: AMQPClient = new AMQPClient(url, tls);
  client.onerror = onFailure;
  client.ondisconnect = (error) => onFailure(error ?? new Error('connection closed'));
  await client.connect();
  try {
    const channel = await client.channel();
    channel.onerror = (reason) => onFailure(new Error(`channel closed: ${reason}`));
    return { client, channel };
  } catch (error) {
    await client.close().catch(ignore);
    throw error;
  }
}

/** A consumer on a queue of a remote broker (or on a queue of its own bound to an exchange). */
export async function remoteSource(
  uri: string,
  name: string,
  spec: SourceSpec,
  onFailure: OnFailure,
): Promise<Source> {
  const { client, channel } = await connect(uri, name, onFailure);
  try {
    let queue: string;
    let ready: number | undefined;
    if (spec.queue !== undefined) {
      const ok = await ensureQueue(client, channel, spec.queue, spec.queueArgs);
      queue = spec.queue;
      ready = ok.messageCount;
    } else {
      queue = (await channel.queueDeclare('', { exclusive: true, autoDelete: true })).name;
      await channel.queueBind(queue, spec.exchange ?? '', spec.exchangeKey);
    }
    if (spec.prefetch > 0) await channel.basicQos(spec.prefetch);
    return {
      pending: () => ready,
      async consume(deliver) {
        await channel.basicConsume(
          queue,
          { noAck: spec.noAck, args: { ...spec.consumerArgs } },
          (message) => {
            ready = message.messageCount;
            deliver({
              tag: message.deliveryTag,
              exchange: message.exchange,
              routingKey: message.routingKey,
              body: message.body ?? new Uint8Array(0),
              properties: fromAmqp(message.properties),
              offset: streamOffset(message.properties.headers?.[OFFSET_HEADER]),
            });
          },
        );
      },
      ack: (tag, multiple) => channel.basicAck(tag, multiple),
      requeue: (tag) => channel.basicNack(tag, true),
      // Closing the connection gives back every unacknowledged delivery.
      close: () => closeQuietly(client),
    };
  } catch (error) {
    await closeQuietly(client);
    throw error;
  }
}

/** A remote broker as a destination. */
export async function remoteDestination(
  uri: string,
  name: string,
  spec: DestinationSpec,
  onFailure: OnFailure,
): Promise<Destination> {
  const { client, channel } = await connect(uri, name, onFailure);
  try {
    if (spec.confirm) await channel.confirmSelect();
    if (spec.queue !== undefined) {
      await ensureQueue(client, channel, spec.queue, spec.queueArgs);
    }
    // The client refuses a publish while the broker blocks the connection (a resource alarm):
    // the shovel waits for the unblock instead, holding what it took meanwhile.
    let unblocked: Promise<void> | undefined;
    let unblock = ignore;
    client.onblocked = () => {
      unblocked ??= new Promise((resolve) => {
        unblock = resolve;
      });
    };
    client.onunblocked = () => {
      unblocked = undefined;
      unblock();
    };
    let held = 0;
    return {
      async publish(exchange, routingKey, body, properties) {
        if (unblocked !== undefined) {
          held++;
          while (unblocked !== undefined) await unblocked;
          held--;
        }
        const sent = channel.basicPublish(exchange, routingKey, body, toAmqp(properties));
        return sent.then(
          () => true,
          (error: unknown) => {
            // The client rejects a nacked publish with this error (a closed channel with others).
            if (error instanceof Error && error.message === NACKED) return false;
            throw error;
          },
        );
      },
      // The client hands every publish to the socket: one past its high-water mark (the broker
      // reads slower than the shovel writes) is flow.
      blockedStatus: () =>
        unblocked !== undefined ? 'blocked' : client.socket?.writableNeedDrain ? 'flow' : 'running',
      held: () => held,
      close: () => closeQuietly(client),
    };
  } catch (error) {
    await closeQuietly(client);
    throw error;
  }
}

/** What the client rejects a publish with when the broker nacked it. */
const NACKED = 'Message rejected';

/**
 * The queue of that name: looked up passively, declared durable with `args` when missing (a
 * failed passive declare closes its channel, so the declare gets a new one).
 */
async function ensureQueue(
  client: AMQPClient,
  channel: AMQPChannel,
  name: string,
  args: Readonly<Record<string, unknown>> | undefined,
): Promise<{ messageCount: number }> {
  const probe = await client.channel();
  // A missing queue closes the probe's channel: that is an answer, not a failure of the link.
  probe.onerror = ignore;
  try {
    return await probe.queueDeclare(name, { passive: true });
  } catch {
    return channel.queueDeclare(name, { durable: true }, { ...args });
  } finally {
    if (!probe.closed) await probe.close().catch(ignore);
  }
}

/** A stream delivery's offset, which the client reads as a number (or a bigint past 2^53). */
function streamOffset(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  return undefined;
}

function closeQuietly(client: AMQPClient): Promise<void> {
  client.onerror = ignore;
  client.ondisconnect = ignore;
  return client.closed ? Promise.resolve() : client.close().catch(ignore);
}

/** The client's properties and mqlite's share their names; absent ones are left out. */
function fromAmqp(properties: AMQPProperties): MessageProperties {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(properties)) {
    if (value !== undefined && value !== null) out[key] = value;
  }
  return out as MessageProperties;
}

function toAmqp(properties: MessageProperties): AMQPProperties {
  return fromAmqp(properties as AMQPProperties) as AMQPProperties;
}

function ignore(): void {}
