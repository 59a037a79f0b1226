/**
 * The ends of a shovel on the broker it runs in (`amqp://` with no host), reached in process:
 * the source is a consumer of one of its queues, the destination its publish, which resolves once
 * the message is stored (a confirm).
 */
import type { LocalBroker } from '../broker/shovel-host.js';
import { NotFoundError, QueueFullError } from '../errors.js';
import type { Message } from '../message/message.js';
import type { FieldTable, MessageProperties } from '../message/types.js';
import type { Subscription } from '../queues/consumer.js';
import type { Destination, DestinationSpec, Source, SourceSpec } from './endpoint.js';
import { OFFSET_HEADER } from './endpoint.js';

/** Opens a consumer on a local queue (or on a queue of its own bound to a local exchange). */
export async function localSource(broker: LocalBroker, spec: SourceSpec): Promise<Source> {
  const session = broker.session();
  try {
    const queue =
      spec.queue !== undefined
        ? await ensureQueue(broker, spec.queue, spec.queueArgs)
        : await session.queue('', { exclusive: true });
    if (spec.exchange !== undefined) await queue.bind(spec.exchange, spec.exchangeKey);
    const unsettled = new Map<number, Message>();
    let subscription: Subscription | undefined;
    return {
      pending: () => queue.messageCount,
      async consume(deliver) {
        subscription = await queue.subscribe(
          {
            noAck: spec.noAck,
            manualAck: true,
            prefetch: spec.prefetch,
            args: (spec.consumerArgs ?? {}) as FieldTable,
          },
          (message) => {
            if (!spec.noAck) unsettled.set(message.deliveryTag, message);
            deliver({
              tag: message.deliveryTag,
              exchange: message.exchange,
              routingKey: message.routingKey,
              body: message.body,
              properties: message.storedProperties,
              offset:
                message.deliveryHeader === OFFSET_HEADER
                  ? Number(message.properties.headers?.[OFFSET_HEADER])
                  : undefined,
            });
          },
        );
      },
      async ack(tag, multiple) {
        const message = unsettled.get(tag);
        if (message === undefined) return;
        // Tags grow in delivery order, the map's order: the earlier ones are at its head.
        for (const earlier of unsettled.keys()) {
          if (earlier > tag || !multiple) break;
          unsettled.delete(earlier);
        }
        unsettled.delete(tag);
        await message.ack(multiple);
      },
      requeue: (tag) => settle(unsettled, tag, (m) => m.nack(true)),
      async close() {
        await subscription?.cancel().catch(ignore);
        for (const message of unsettled.values()) await message.nack(true).catch(ignore);
        unsettled.clear();
        await session.close();
      },
    };
  } catch (error) {
    await session.close().catch(ignore);
    throw error;
  }
}

/** The local broker as a destination. */
export async function localDestination(
  broker: LocalBroker,
  spec: DestinationSpec,
): Promise<Destination> {
  if (spec.queue !== undefined) await ensureQueue(broker, spec.queue, spec.queueArgs);
  return {
    publish: (exchange, routingKey, body, properties: MessageProperties) =>
      broker.publish(exchange, body, { ...properties, routingKey }).then(
        () => true,
        (error: unknown) => {
          // With confirms, what a network client sees as a basic.nack; without, the message is
          // sent and the full queue drops it, as a broker does to a publisher not confirming.
          if (error instanceof QueueFullError) return !spec.confirm;
          throw error;
        },
      ),
    // An in-process publish is never held back.
    blockedStatus: () => 'running',
    held: () => 0,
    close: async () => {},
  };
}

/** The queue of that name; declared durable, with `args`, when missing (as RabbitMQ's shovel). */
async function ensureQueue(
  broker: LocalBroker,
  name: string,
  args: Readonly<Record<string, unknown>> | undefined,
) {
  try {
    return await broker.queue(name, { passive: true });
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    return broker.queue(name, { durable: true, arguments: { ...args } });
  }
}

async function settle(
  unsettled: Map<number, Message>,
  tag: number,
  how: (message: Message) => Promise<void>,
): Promise<void> {
  const message = unsettled.get(tag);
  if (message === undefined) return;
  unsettled.delete(tag);
  await how(message);
}

function ignore(): void {}
