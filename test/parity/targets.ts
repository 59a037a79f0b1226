/**
 * The targets the parity scenarios run against. Every scenario runs on every target listed in
 * `targets` below: the in-process mqlite broker, and a real broker through
 * `@cloudamqp/amqp-client` (the local RabbitMQ, or whatever `AMQP_URL` names).
 */

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { AMQPMessage } from '@cloudamqp/amqp-client';
import { AMQPClient, AMQPSession } from '@cloudamqp/amqp-client';
import { expect } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { PolicyOptions } from '../../src/broker/policies.js';
import { listen } from '../../src/server/server.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { eventually, expectAmqpError, sleep } from './helpers.js';
import type { ParitySession, TargetBehaviour } from './types.js';

/** A broker the scenarios can run against. */
export interface ParityTarget {
  readonly name: string;
  /** Why the target cannot run right now (e.g. broker unreachable), or undefined when it can. */
  unavailable(): Promise<string | undefined>;
  /** Opens a fresh session; the harness stops it after each scenario. */
  open(): Promise<ParitySession>;
  /** Offset of the first message of a stream: 0 on RabbitMQ, 1 on mqlite and LavinMQ. */
  readonly firstStreamOffset: number;
  /** Where it differs on purpose (see `TargetBehaviour`). */
  readonly behaviour: TargetBehaviour;
  /** Lets `ms` of broker time pass (see `ParityContext.elapse`). */
  elapse(session: ParitySession, ms: number): Promise<void>;
  /** See `ParityContext.expectUnroutable`. */
  expectUnroutable(session: ParitySession, publish: () => Promise<unknown>): Promise<void>;
  /** See `ParityContext.connection`. */
  connect(session: ParitySession): Promise<ParitySession>;
  /** Sets and clears policies on the broker behind a session, where the target can. */
  readonly policies?: PolicyControl;
  /** See `ParityContext.deleteExchange`. */
  deleteExchange(session: ParitySession, name: string, params: ExchangeDeleteParams): Promise<void>;
}

/** The flags of an `exchange.delete`. */
export interface ExchangeDeleteParams {
  readonly ifUnused?: boolean;
}

/** How a target sets policies: `rabbitmqctl` for RabbitMQ, `broker.setPolicy` for mqlite. */
export interface PolicyControl {
  set(session: ParitySession, name: string, options: PolicyOptions): Promise<void>;
  clear(session: ParitySession, name: string): Promise<void>;
}

/** The targets that set policies (the parity suite's `only` for policy scenarios). */
export const POLICY_TARGETS = ['mqlite', 'mqlite-wire', 'rabbitmq'];

const run = promisify(execFile);

/** The local RabbitMQ's policies, through `rabbitmqctl` (a slow call: seconds each). */
const rabbitmqctl: PolicyControl = {
  async set(_session, name, { pattern, applyTo = 'all', priority = 0, definition }) {
    await run('rabbitmqctl', [
      'set_policy',
      name,
      pattern,
      JSON.stringify(definition),
      '--apply-to',
      applyTo,
      '--priority',
      String(priority),
    ]);
  },
  async clear(_session, name) {
    await run('rabbitmqctl', ['clear_policy', name]);
  },
};

/** The policies of the broker each session was opened on. */
function brokerPolicies(brokerOf: (session: ParitySession) => Broker): PolicyControl {
  return {
    set: (session, name, options) => brokerOf(session).setPolicy(name, options),
    clear: (session, name) => brokerOf(session).clearPolicy(name),
  };
}

/** The broker under `AMQP_URL`, by default the local RabbitMQ the project's machines run. */
export const amqpUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/**
 * A real AMQP 0-9-1 broker through `@cloudamqp/amqp-client` (RabbitMQ, or LavinMQ when `AMQP_URL`
 * points at one: set `PARITY_STREAM_OFFSET_BASE=1` for a broker counting stream offsets from 1).
 */
export function amqpBrokerTarget(
  name: string,
  url: string,
  firstStreamOffset = Number(process.env.PARITY_STREAM_OFFSET_BASE ?? 0),
): ParityTarget {
  const wire = overTheWire();
  return {
    name,
    firstStreamOffset,
    behaviour: {
      cancelRequeuesUnacked: true,
      maxLengthBytesReason: 'maxlen',
      deliveryCountHeader: false,
      notImplementedClosesConnection: true,
      multipleSpansQueues: true,
      unknownExchangeTypeClosesConnection: name !== 'lavinmq',
      quorumRules: '3.10',
    },
    async unavailable() {
      try {
        const session = await AMQPSession.connect(url, { logger: null, maxRetries: 1 });
        await session.stop();
        return undefined;
      } catch (err) {
        return `no AMQP broker at ${redact(url)}: ${(err as Error).message}`;
      }
    },
    open: () => wire.connect(url),
    ...(name === 'rabbitmq' && { policies: rabbitmqctl }),
    elapse: (_session, ms) => sleep(ms),
    connect: () => wire.connect(url),
    deleteExchange: (_session, name, params) => deleteExchangeAt(url, name, params),
    expectUnroutable: wire.expectUnroutable,
  };
}

/**
 * mqlite's AMQP server through `@cloudamqp/amqp-client`: a fresh memory broker on a
 * `ManualClock` per scenario, served on a free port; stopping the session stops both.
 */
export function mqliteWireTarget(): ParityTarget {
  const wire = overTheWire();
  const clocks = new WeakMap<ParitySession, ManualClock>();
  const urls = new WeakMap<ParitySession, string>();
  const brokers = new WeakMap<ParitySession, Broker>();
  return {
    name: 'mqlite-wire',
    firstStreamOffset: 1,
    behaviour: {
      // amqp-client's cancel closes the channel, and the server requeues what it held.
      cancelRequeuesUnacked: true,
      maxLengthBytesReason: 'maxlenbytes',
      // The server relays x-delivery-count only where RabbitMQ writes it (quorum queues).
      deliveryCountHeader: false,
      notImplementedClosesConnection: true,
      // The server scopes delivery tags per channel, as RabbitMQ does.
      multipleSpansQueues: true,
      unknownExchangeTypeClosesConnection: false,
      quorumRules: '4.x',
    },
    unavailable: async () => undefined,
    async open() {
      const clock = new ManualClock(Date.now());
      const broker = await Broker.open({ clock });
      const server = await listen(broker);
      const session = await wire.connect(server.url);
      const stop = session.stop.bind(session);
      session.stop = async (reason?: string) => {
        try {
          await stop(reason);
        } finally {
          await server.close();
          await broker.close();
        }
      };
      clocks.set(session, clock);
      urls.set(session, server.url);
      brokers.set(session, broker);
      return session;
    },
    policies: brokerPolicies((session) => {
      const broker = brokers.get(session);
      if (!broker) throw new Error('session was not opened by this target');
      return broker;
    }),
    async connect(session) {
      const url = urls.get(session);
      if (!url) throw new Error('session was not opened by this target');
      return wire.connect(url);
    },
    async deleteExchange(session, name, params) {
      const url = urls.get(session);
      if (!url) throw new Error('session was not opened by this target');
      await deleteExchangeAt(url, name, params);
    },
    async elapse(session, ms) {
      const clock = clocks.get(session);
      if (!clock) throw new Error('session was not opened by this target');
      // Real time passed over the network too (timestamps are compared with Date.now()):
      // catch up with it first, then let `ms` pass.
      clock.setTime(Math.max(clock.now(), Date.now()) + ms);
    },
    expectUnroutable: wire.expectUnroutable,
  };
}

/** Sessions of `@cloudamqp/amqp-client` that record the messages a broker returns. */
function overTheWire() {
  const returned = new WeakMap<ParitySession, AMQPMessage[]>();
  return {
    async connect(url: string): Promise<AMQPSession> {
      const messages: AMQPMessage[] = [];
      const session = await AMQPSession.connect(url, {
        logger: null,
        onreturn: (msg) => messages.push(msg),
      });
      returned.set(session, messages);
      return session;
    },
    async expectUnroutable(session: ParitySession, publish: () => Promise<unknown>) {
      const messages = returned.get(session);
      if (!messages) throw new Error('session was not opened by this target');
      const before = messages.length;
      await publish(); // the broker confirms a returned message after basic.return
      const [msg] = await eventually(
        () => messages.slice(before),
        (m) => m.length > 0,
        'a basic.return for the mandatory publish',
      );
      expect(msg?.replyCode).toBe(312);
      expect(msg?.replyText).toBe('NO_ROUTE');
    },
  };
}

/**
 * Deletes an exchange by name on its own connection: an `AMQPSession` deletes only through the
 * handle a declare returns.
 */
async function deleteExchangeAt(
  url: string,
  name: string,
  params: ExchangeDeleteParams,
): Promise<void> {
  const client = new AMQPClient(url);
  await client.connect();
  try {
    await (await client.channel()).exchangeDelete(name, params);
  } finally {
    if (!client.closed) await client.close();
  }
}

function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

/**
 * mqlite in process: a fresh memory broker per scenario, on a `ManualClock` so time-based
 * scenarios run without waiting.
 */
export function mqliteTarget(): ParityTarget {
  const clocks = new WeakMap<ParitySession, ManualClock>();
  return {
    name: 'mqlite',
    firstStreamOffset: 1,
    behaviour: {
      cancelRequeuesUnacked: false,
      maxLengthBytesReason: 'maxlenbytes',
      deliveryCountHeader: true,
      notImplementedClosesConnection: false,
      multipleSpansQueues: false,
      unknownExchangeTypeClosesConnection: false,
      quorumRules: '4.x',
    },
    unavailable: async () => undefined,
    async open() {
      const clock = new ManualClock(Date.now());
      const broker = await Broker.open({ clock });
      clocks.set(broker, clock);
      return broker;
    },
    async elapse(session, ms) {
      const clock = clocks.get(session);
      if (!clock) throw new Error('session was not opened by this target');
      clock.advance(ms);
    },
    async connect(session) {
      return (session as Broker).session() as unknown as ParitySession;
    },
    policies: brokerPolicies((session) => session as Broker),
    deleteExchange: (session, name, params) => (session as Broker).deleteExchange(name, params),
    async expectUnroutable(_session, publish) {
      await expectAmqpError(publish(), 312, /^NO_ROUTE - /);
    },
  };
}

/**
 * The LavinMQ 2.9.1 under `LAVINMQ_URL` (`../shared/lavinmq/start` prints one), the broker mqlite
 * follows for streams; undefined when the variable is not set.
 */
export const lavinmqUrl = process.env.LAVINMQ_URL || undefined;

/** Every target the parity suite runs against. */
export const targets: readonly ParityTarget[] = [
  mqliteTarget(),
  mqliteWireTarget(),
  amqpBrokerTarget(process.env.AMQP_URL ? 'amqp-url' : 'rabbitmq', amqpUrl),
  ...(lavinmqUrl ? [amqpBrokerTarget('lavinmq', lavinmqUrl, 1)] : []),
];
