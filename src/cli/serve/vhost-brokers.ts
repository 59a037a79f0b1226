/**
 * The brokers `mqlite serve` serves, one per virtual host. With a data directory, the vhost `/`
 * is the directory itself (so every tool and `Broker.open()` read it as they read any data
 * directory) and each other vhost is a data directory of its own in `<data>/~vhosts/`, under
 * its name encoded as queue directories are; `~` keeps it apart from the queues of `/`.
 * Without one, each vhost is a broker in memory.
 */
import path from 'node:path';
import { Broker, type BrokerOptions } from '../../broker/broker.js';
import type { ShovelDefinition } from '../../broker/shovel-definition.js';
import { fsStorage } from '../../storage/fs/index.js';
import { encodeName } from '../../storage/fs/names.js';
import { memoryStorage } from '../../storage/memory.js';
import { UsageError } from '../command.js';

/** Where the data of the vhosts other than `/` live, inside the data directory. */
export const VHOSTS_DIR = '~vhosts';

/** The data directory of `vhost` within `data`. */
export function vhostDirectory(data: string, vhost: string): string {
  return vhost === '/' ? data : path.join(data, VHOSTS_DIR, encodeName(vhost));
}

export interface VhostBrokerOptions {
  /** The data directory; undefined: memory storage. */
  readonly data: string | undefined;
  /** The queues to declare in `/` (a Broker config file). */
  readonly config: string | undefined;
  /** A RabbitMQ definitions file to load into `/`. */
  readonly definitions?: string | undefined;
  /** Shovels to set in `/` once it opened. */
  readonly shovels?: readonly { readonly name: string; readonly value: unknown }[];
  readonly onError: (vhost: string, error: unknown) => void;
}

/**
 * Opens `/` (first: it takes the data directory's lock) and every other vhost of `vhosts`.
 * A failure closes what was opened and throws the error that stopped it.
 */
export async function openVhostBrokers(
  vhosts: readonly string[],
  options: VhostBrokerOptions,
): Promise<Map<string, Broker>> {
  const brokers = new Map<string, Broker>();
  try {
    for (const vhost of ['/', ...vhosts.filter((v) => v !== '/')]) {
      const opts: BrokerOptions = {
        storage:
          options.data === undefined
            ? memoryStorage()
            : fsStorage({ dir: vhostDirectory(options.data, vhost) }),
        onError: (error) => options.onError(vhost, error),
        vhost,
      };
      if (vhost === '/' && options.config !== undefined) opts.config = options.config;
      if (vhost === '/' && options.definitions !== undefined) {
        opts.definitions = options.definitions;
      }
      const broker = await Broker.open(opts);
      brokers.set(vhost, broker);
      if (vhost !== '/') continue;
      for (const { name, value } of options.shovels ?? []) {
        await broker.setShovel(name, value as ShovelDefinition).catch((error: unknown) => {
          throw new UsageError(`--shovel ${name}: ${(error as Error).message}`);
        });
      }
    }
    return brokers;
  } catch (error) {
    await closeVhostBrokers(brokers).catch(() => {});
    throw error;
  }
}

/** Closes every broker, `/` (the holder of the directory's lock) last. */
export async function closeVhostBrokers(brokers: ReadonlyMap<string, Broker>): Promise<void> {
  const others = [...brokers].filter(([vhost]) => vhost !== '/').map(([, broker]) => broker);
  const results = await Promise.allSettled(others.map((broker) => broker.close()));
  await brokers.get('/')?.close();
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}
