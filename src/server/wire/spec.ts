/**
 * The AMQP 0-9-1 methods as one table: class and method ids, names and argument types, in wire
 * order. Encoding, decoding and the method types all derive from it, so a method is described in
 * exactly one place.
 */
import type { FieldTable } from '../../message/types.js';

/** An argument's wire type, as the 0-9-1 specification names its domains. */
export type ArgType =
  | 'octet'
  | 'short'
  | 'long'
  | 'longlong'
  | 'shortstr'
  | 'longstr'
  | 'bit'
  | 'table'
  | 'timestamp';

function method<const N extends string, const A extends Record<string, ArgType>>(
  classId: number,
  methodId: number,
  name: N,
  args: A,
  content = false,
) {
  return { classId, methodId, name, args, content };
}

const reserved = { reserved1: 'short' } as const;

/** Every method of AMQP 0-9-1 (with RabbitMQ's extensions: confirm, blocked, update-secret). */
export const METHODS = [
  method(10, 10, 'connection.start', {
    versionMajor: 'octet',
    versionMinor: 'octet',
    serverProperties: 'table',
    mechanisms: 'longstr',
    locales: 'longstr',
  }),
  method(10, 11, 'connection.start-ok', {
    clientProperties: 'table',
    mechanism: 'shortstr',
    response: 'longstr',
    locale: 'shortstr',
  }),
  method(10, 20, 'connection.secure', { challenge: 'longstr' }),
  method(10, 21, 'connection.secure-ok', { response: 'longstr' }),
  method(10, 30, 'connection.tune', { channelMax: 'short', frameMax: 'long', heartbeat: 'short' }),
  method(10, 31, 'connection.tune-ok', {
    channelMax: 'short',
    frameMax: 'long',
    heartbeat: 'short',
  }),
  method(10, 40, 'connection.open', {
    virtualHost: 'shortstr',
    capabilities: 'shortstr',
    insist: 'bit',
  }),
  method(10, 41, 'connection.open-ok', { knownHosts: 'shortstr' }),
  method(10, 50, 'connection.close', {
    replyCode: 'short',
    replyText: 'shortstr',
    classId: 'short',
    methodId: 'short',
  }),
  method(10, 51, 'connection.close-ok', {}),
  method(10, 60, 'connection.blocked', { reason: 'shortstr' }),
  method(10, 61, 'connection.unblocked', {}),
  method(10, 70, 'connection.update-secret', { newSecret: 'longstr', reason: 'shortstr' }),
  method(10, 71, 'connection.update-secret-ok', {}),
  method(20, 10, 'channel.open', { outOfBand: 'shortstr' }),
  method(20, 11, 'channel.open-ok', { channelId: 'longstr' }),
  method(20, 20, 'channel.flow', { active: 'bit' }),
  method(20, 21, 'channel.flow-ok', { active: 'bit' }),
  method(20, 40, 'channel.close', {
    replyCode: 'short',
    replyText: 'shortstr',
    classId: 'short',
    methodId: 'short',
  }),
  method(20, 41, 'channel.close-ok', {}),
  method(40, 10, 'exchange.declare', {
    ...reserved,
    exchange: 'shortstr',
    type: 'shortstr',
    passive: 'bit',
    durable: 'bit',
    autoDelete: 'bit',
    internal: 'bit',
    nowait: 'bit',
    arguments: 'table',
  }),
  method(40, 11, 'exchange.declare-ok', {}),
  method(40, 20, 'exchange.delete', {
    ...reserved,
    exchange: 'shortstr',
    ifUnused: 'bit',
    nowait: 'bit',
  }),
  method(40, 21, 'exchange.delete-ok', {}),
  method(40, 30, 'exchange.bind', {
    ...reserved,
    destination: 'shortstr',
    source: 'shortstr',
    routingKey: 'shortstr',
    nowait: 'bit',
    arguments: 'table',
  }),
  method(40, 31, 'exchange.bind-ok', {}),
  method(40, 40, 'exchange.unbind', {
    ...reserved,
    destination: 'shortstr',
    source: 'shortstr',
    routingKey: 'shortstr',
    nowait: 'bit',
    arguments: 'table',
  }),
  method(40, 51, 'exchange.unbind-ok', {}),
  method(50, 10, 'queue.declare', {
    ...reserved,
    queue: 'shortstr',
    passive: 'bit',
    durable: 'bit',
    exclusive: 'bit',
    autoDelete: 'bit',
    nowait: 'bit',
    arguments: 'table',
  }),
  method(50, 11, 'queue.declare-ok', {
    queue: 'shortstr',
    messageCount: 'long',
    consumerCount: 'long',
  }),
  method(50, 20, 'queue.bind', {
    ...reserved,
    queue: 'shortstr',
    exchange: 'shortstr',
    routingKey: 'shortstr',
    nowait: 'bit',
    arguments: 'table',
  }),
  method(50, 21, 'queue.bind-ok', {}),
  method(50, 30, 'queue.purge', { ...reserved, queue: 'shortstr', nowait: 'bit' }),
  method(50, 31, 'queue.purge-ok', { messageCount: 'long' }),
  method(50, 40, 'queue.delete', {
    ...reserved,
    queue: 'shortstr',
    ifUnused: 'bit',
    ifEmpty: 'bit',
    nowait: 'bit',
  }),
  method(50, 41, 'queue.delete-ok', { messageCount: 'long' }),
  method(50, 50, 'queue.unbind', {
    ...reserved,
    queue: 'shortstr',
    exchange: 'shortstr',
    routingKey: 'shortstr',
    arguments: 'table',
  }),
  method(50, 51, 'queue.unbind-ok', {}),
  method(60, 10, 'basic.qos', { prefetchSize: 'long', prefetchCount: 'short', global: 'bit' }),
  method(60, 11, 'basic.qos-ok', {}),
  method(60, 20, 'basic.consume', {
    ...reserved,
    queue: 'shortstr',
    consumerTag: 'shortstr',
    noLocal: 'bit',
    noAck: 'bit',
    exclusive: 'bit',
    nowait: 'bit',
    arguments: 'table',
  }),
  method(60, 21, 'basic.consume-ok', { consumerTag: 'shortstr' }),
  method(60, 30, 'basic.cancel', { consumerTag: 'shortstr', nowait: 'bit' }),
  method(60, 31, 'basic.cancel-ok', { consumerTag: 'shortstr' }),
  method(
    60,
    40,
    'basic.publish',
    {
      ...reserved,
      exchange: 'shortstr',
      routingKey: 'shortstr',
      mandatory: 'bit',
      immediate: 'bit',
    },
    true,
  ),
  method(
    60,
    50,
    'basic.return',
    { replyCode: 'short', replyText: 'shortstr', exchange: 'shortstr', routingKey: 'shortstr' },
    true,
  ),
  method(
    60,
    60,
    'basic.deliver',
    {
      consumerTag: 'shortstr',
      deliveryTag: 'longlong',
      redelivered: 'bit',
      exchange: 'shortstr',
      routingKey: 'shortstr',
    },
    true,
  ),
  method(60, 70, 'basic.get', { ...reserved, queue: 'shortstr', noAck: 'bit' }),
  method(
    60,
    71,
    'basic.get-ok',
    {
      deliveryTag: 'longlong',
      redelivered: 'bit',
      exchange: 'shortstr',
      routingKey: 'shortstr',
      messageCount: 'long',
    },
    true,
  ),
  method(60, 72, 'basic.get-empty', { clusterId: 'shortstr' }),
  method(60, 80, 'basic.ack', { deliveryTag: 'longlong', multiple: 'bit' }),
  method(60, 90, 'basic.reject', { deliveryTag: 'longlong', requeue: 'bit' }),
  method(60, 100, 'basic.recover-async', { requeue: 'bit' }),
  method(60, 110, 'basic.recover', { requeue: 'bit' }),
  method(60, 111, 'basic.recover-ok', {}),
  method(60, 120, 'basic.nack', { deliveryTag: 'longlong', multiple: 'bit', requeue: 'bit' }),
  method(85, 10, 'confirm.select', { nowait: 'bit' }),
  method(85, 11, 'confirm.select-ok', {}),
  method(90, 10, 'tx.select', {}),
  method(90, 11, 'tx.select-ok', {}),
  method(90, 20, 'tx.commit', {}),
  method(90, 21, 'tx.commit-ok', {}),
  method(90, 30, 'tx.rollback', {}),
  method(90, 31, 'tx.rollback-ok', {}),
] as const;

/** One method's description. */
export type MethodDef = (typeof METHODS)[number];
/** A method's name, `class.method` as the specification spells it. */
export type MethodName = MethodDef['name'];

/** The JavaScript value an argument type decodes to (and encodes from). */
export type ValueOf<T extends ArgType> = T extends 'bit'
  ? boolean
  : T extends 'shortstr'
    ? string
    : T extends 'longstr'
      ? Uint8Array
      : T extends 'table'
        ? FieldTable
        : T extends 'timestamp'
          ? Date
          : number;

type DefArgs<N extends MethodName> = Extract<MethodDef, { name: N }>['args'];

/** The decoded arguments of the method named `N`. */
export type ArgsOf<N extends MethodName> = {
  -readonly [K in keyof DefArgs<N>]: DefArgs<N>[K] extends ArgType ? ValueOf<DefArgs<N>[K]> : never;
};

/** A method received or sent: its description and its arguments. */
export type Method = {
  [N in MethodName]: { readonly name: N; readonly def: MethodDef; readonly args: ArgsOf<N> };
}[MethodName];

const byId = new Map<number, MethodDef>(METHODS.map((m) => [(m.classId << 16) | m.methodId, m]));
const byName = new Map<string, MethodDef>(METHODS.map((m) => [m.name, m]));

/** The method with these ids, or undefined. */
export function methodById(classId: number, methodId: number): MethodDef | undefined {
  return byId.get((classId << 16) | methodId);
}

/** The description of a method by name. */
export function methodByName(name: MethodName): MethodDef {
  return byName.get(name)!;
}

/** Whether any method of the class exists (an unknown class and an unknown method differ). */
export function classExists(classId: number): boolean {
  return METHODS.some((m) => m.classId === classId);
}
