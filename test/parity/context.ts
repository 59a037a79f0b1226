import { randomBytes } from 'node:crypto';
import type { ParityTarget, PolicyControl } from './targets.js';
import type { ParityContext, ParitySession } from './types.js';

/** A scenario's context plus the cleanup the harness runs after it. */
export interface ScenarioRun {
  readonly ctx: ParityContext;
  /** Deletes everything the scenario declared through `ctx`, newest first; never throws. */
  cleanup(): Promise<void>;
}

/** Builds the context of one scenario run on one target. */
export function scenarioRun(target: ParityTarget, session: ParitySession): ScenarioRun {
  const prefix = `parity-${randomBytes(4).toString('hex')}`;
  const undo: ((s: ParitySession) => Promise<unknown>)[] = [];
  const connections: ParitySession[] = [];
  const name = (suffix: string) => `${prefix}-${suffix}`;

  const ctx: ParityContext = {
    target: target.name,
    behaviour: target.behaviour,
    name,
    async queue(suffix, options) {
      const queueName = name(suffix);
      // Registered before declaring: a declare that fails half-way may still have created it.
      undo.push(async (s) => (await s.queue(queueName, { passive: true })).delete());
      return session.queue(queueName, options);
    },
    async exchange(suffix, type, options) {
      const exchangeName = name(suffix);
      undo.push(async (s) => (await s.exchange(exchangeName, type, { passive: true })).delete());
      return session.exchange(exchangeName, type, options);
    },
    streamOffset: (n) => n - 1 + target.firstStreamOffset,
    elapse: (ms) => target.elapse(session, ms),
    expectUnroutable: (publish) => target.expectUnroutable(session, publish),
    async policy(suffix, options) {
      const control = policyControl(target);
      const policyName = name(suffix);
      undo.push(() => control.clear(session, policyName));
      await control.set(session, policyName, options);
      return policyName;
    },
    async clearPolicy(policyName) {
      await policyControl(target).clear(session, policyName);
    },
    deleteExchange: (exchangeName, params = {}) =>
      target.deleteExchange(session, exchangeName, params),
    async connection() {
      const other = await target.connect(session);
      connections.push(other);
      return other;
    },
  };

  return {
    ctx,
    async cleanup() {
      for (const other of connections) if (!other.closed) await other.stop().catch(() => undefined);
      // A scenario may have broken its session on purpose; clean up on a fresh one then.
      const s = session.closed ? await target.open() : session;
      try {
        for (const step of undo.reverse()) await step(s).catch(() => undefined);
      } finally {
        if (s !== session) await s.stop();
      }
    },
  };
}

function policyControl(target: ParityTarget): PolicyControl {
  if (!target.policies) throw new Error(`${target.name} cannot set policies`);
  return target.policies;
}
