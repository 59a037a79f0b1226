/**
 * The shovels of one broker, loaded by the broker at its first shovel (by dynamic import, so that
 * the AMQP client stays out of processes that never shovel).
 */
import type { ShovelDefinition } from '../broker/shovel-definition.js';
import type { ShovelHost, ShovelRunner, ShovelStatus } from '../broker/shovel-host.js';
import { Shovel } from './shovel.js';

/** A runner for the shovels of the broker `host` reaches. */
export function createShovelRunner(host: ShovelHost): ShovelRunner {
  const running = new Map<string, Shovel>();
  const stop = async (name: string) => {
    const shovel = running.get(name);
    running.delete(name);
    await shovel?.stop();
  };
  return {
    async start(name: string, definition: ShovelDefinition) {
      await stop(name);
      const shovel = new Shovel(name, definition, host, () => {
        if (running.get(name) === shovel) running.delete(name);
      });
      running.set(name, shovel);
      shovel.start();
    },
    stop,
    status: (name: string): ShovelStatus | undefined => running.get(name)?.status(),
    async close() {
      for (const name of [...running.keys()]) await stop(name);
    },
  };
}
