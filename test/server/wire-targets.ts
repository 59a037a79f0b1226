/**
 * Raw-protocol targets for channel behaviour that depends on the storage: mqlite's server over
 * memory and over fs storage (a fresh directory per file), and the local RabbitMQ unless
 * `PARITY_TARGETS=mqlite`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { type AmqpServer, listen } from '../../src/server/server.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { onlyMqlite, rabbitUrl } from './served.js';

export interface PortTarget {
  readonly name: string;
  /** The port to connect to, set once the file's servers listen. */
  port: number;
}

/** mqlite on memory and on fs, served for the file's tests, and RabbitMQ. */
export function storageTargets(): PortTarget[] {
  const targets: PortTarget[] = [
    { name: 'mqlite (memory)', port: 0 },
    { name: 'mqlite (fs)', port: 0 },
  ];
  if (!onlyMqlite)
    targets.push({ name: 'rabbitmq', port: Number(new URL(rabbitUrl).port || 5672) });
  const opened: { broker: Broker; server: AmqpServer }[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'mqlite-channel-'));
  beforeAll(async () => {
    for (const [i, storage] of [undefined, fsStorage({ dir })].entries()) {
      const broker = await Broker.open(storage ? { storage } : {});
      const server = await listen(broker);
      opened.push({ broker, server });
      targets[i]!.port = server.port;
    }
  });
  afterAll(async () => {
    for (const { broker, server } of opened) {
      await server.close();
      await broker.close();
    }
    rmSync(dir, { recursive: true, force: true });
  });
  return targets;
}
