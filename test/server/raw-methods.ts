/** The queue methods the raw-protocol tests send, with AMQP's defaults for the flags. */
import type { FieldTable } from '../../src/message/types.js';
import type { RawClient } from './raw-client.js';

export function declareQueue(
  client: RawClient,
  channel: number,
  queue: string,
  flags: { autoDelete?: boolean; exclusive?: boolean; arguments?: FieldTable } = {},
): void {
  client.sendMethod(channel, 'queue.declare', {
    reserved1: 0,
    queue,
    passive: false,
    durable: false,
    exclusive: flags.exclusive ?? false,
    autoDelete: flags.autoDelete ?? false,
    nowait: false,
    arguments: flags.arguments ?? {},
  });
}

export function consume(
  client: RawClient,
  channel: number,
  queue: string,
  consumerTag: string,
  flags: { noAck?: boolean } = {},
): void {
  client.sendMethod(channel, 'basic.consume', {
    reserved1: 0,
    queue,
    consumerTag,
    noLocal: false,
    noAck: flags.noAck ?? false,
    exclusive: false,
    nowait: false,
    arguments: {},
  });
}

export function deleteQueue(client: RawClient, channel: number, queue: string): void {
  client.sendMethod(channel, 'queue.delete', {
    reserved1: 0,
    queue,
    ifUnused: false,
    ifEmpty: false,
    nowait: false,
  });
}
