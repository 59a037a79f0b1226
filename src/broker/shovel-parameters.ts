/**
 * The broker's shovels: their definitions (the `shovel` runtime parameters of its vhost), stored
 * with its declarations so that a broker reopened on the same storage starts them again, and the
 * runner that moves their messages. The runner, with its AMQP client, lives in `src/shovels/` and
 * is loaded by dynamic import the first time a shovel starts: a broker that never shovels never
 * loads it. The broker hands it a `ShovelHost`, the few calls a shovel makes on its own broker.
 */

import stableJson from 'fast-json-stable-stringify';
import type { Clock } from '../clock.js';
import { type DataLossError, NotFoundError, resourceName } from '../errors.js';
import type { BrokerRegistry } from './registry.js';
import { checkShovel, type ShovelDefinition } from './shovel-definition.js';
import type {
  LocalBroker,
  ShovelHost,
  ShovelParameter,
  ShovelRunner,
  ShovelStatus,
} from './shovel-host.js';

/** Loads the runner: by dynamic import, so that only a broker with shovels loads the client. */
export type ShovelRunnerLoader = (host: ShovelHost) => Promise<ShovelRunner>;

const loadRunner: ShovelRunnerLoader = async (host) =>
  (await import('../shovels/runner.js')).createShovelRunner(host);

/** The shovels of one broker. */
export class Shovels {
  readonly #definitions = new Map<string, ShovelDefinition>();
  readonly #registry: BrokerRegistry;
  readonly #host: ShovelHost;
  readonly #load: ShovelRunnerLoader;
  #runner: Promise<ShovelRunner> | undefined;

  constructor(
    registry: BrokerRegistry,
    broker: LocalBroker,
    clock: Clock,
    onDamage: (error: DataLossError) => void,
    load: ShovelRunnerLoader = loadRunner,
  ) {
    this.#registry = registry;
    this.#load = load;
    this.#host = {
      broker,
      clock,
      finished: (name) => {
        if (!this.#definitions.delete(name)) return;
        this.#registry.removeShovel(name);
        this.#registry.sync().catch(() => {});
      },
      position: (name) => this.#registry.shovelPosition(name),
      savePosition: (name, offset) => {
        if (this.#definitions.has(name)) this.#registry.saveShovelPosition(name, offset);
      },
    };
    for (const [name, definition] of registry.loadShovels(onDamage))
      this.#definitions.set(name, definition);
  }

  /** Starts the stored shovels not started yet (a definitions file may have started some). */
  async resume(): Promise<void> {
    if (this.#definitions.size === 0) return;
    const runner = await this.#runnerLoaded();
    for (const [name, definition] of this.#definitions) {
      if (runner.status(name) === undefined) await runner.start(name, definition);
    }
  }

  /** Checks, stores and (re)starts a shovel. */
  async set(name: string, value: unknown): Promise<void> {
    const definition = checkShovel(name, value);
    const stored = this.#definitions.get(name);
    // The same definition again (a definitions file loaded at each start) leaves it running.
    if (
      stored !== undefined &&
      stableJson(stored) === stableJson(definition) &&
      this.#runner !== undefined
    ) {
      return;
    }
    // A new definition starts where its consumer arguments say, not where the old one was.
    if (stored !== undefined && stableJson(stored) !== stableJson(definition)) {
      this.#registry.removeShovelPosition(name);
    }
    this.#definitions.set(name, definition);
    this.#registry.saveShovel(name, definition);
    await this.#registry.sync();
    await (await this.#runnerLoaded()).start(name, definition);
  }

  /** @throws NotFoundError (404) when there is no such shovel. */
  async clear(name: string, vhost: string): Promise<void> {
    if (typeof name !== 'string') throw new TypeError('shovel name must be a string');
    if (!this.#definitions.delete(name)) {
      throw new NotFoundError(`no ${resourceName('shovel', name, vhost)}`);
    }
    this.#registry.removeShovel(name);
    await this.#registry.sync();
    await (await this.#runner)?.stop(name);
  }

  /**
   * Restarts a shovel, as the management API's `DELETE /api/shovels/vhost/{vhost}/{name}/restart`.
   * @throws NotFoundError (404) when there is no such shovel.
   */
  async restart(name: string, vhost: string): Promise<void> {
    const definition = this.#definitions.get(name);
    if (definition === undefined)
      throw new NotFoundError(`no ${resourceName('shovel', name, vhost)}`);
    await (await this.#runnerLoaded()).start(name, definition);
  }

  /** Every shovel, in name order. */
  async list(vhost: string): Promise<ShovelStatus[]> {
    const runner = await this.#runner;
    return [...this.#definitions.keys()].sort().map(
      (name) =>
        runner?.status(name) ?? {
          name,
          vhost,
          type: 'dynamic',
          state: 'starting',
          since: this.#host.clock.now(),
          source: '',
          destination: '',
          forwarded: 0,
          inFlight: 0,
          pending: undefined,
          blockedStatus: undefined,
          published: 0,
          held: 0,
          remaining: undefined,
          remainingUnacked: undefined,
        },
    );
  }

  /** The shovels as a definitions file's `parameters`. */
  parameters(vhost: string): ShovelParameter[] {
    return [...this.#definitions]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([name, value]) => ({ vhost, component: 'shovel', name, value }));
  }

  /** Stops every shovel (their definitions stay stored). */
  async close(): Promise<void> {
    await (await this.#runner?.catch(() => undefined))?.close();
  }

  #runnerLoaded(): Promise<ShovelRunner> {
    this.#runner ??= this.#load(this.#host);
    return this.#runner;
  }
}
