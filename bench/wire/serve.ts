/**
 * A server in a process of its own, as RabbitMQ and LavinMQ run in theirs, so a client and the
 * server it measures do not share a thread: `memory` and `fs` serve a mqlite broker on that
 * storage, `sink` the frame sink (sink.ts). Sends `{ port }` once listening; answers `'usage'`
 * with its memory after a full GC, and exits on `'exit'`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Broker } from '../../src/broker/broker.js';
import { listen } from '../../src/server/server.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { listenSink, portOf } from './sink.js';

export type ServerKind = 'memory' | 'fs' | 'sink';
export interface Usage {
  heap: number;
  rss: number;
}

const kind = process.argv[2] as ServerKind;
const gc = (globalThis as { gc?: () => void }).gc;
let stop: () => Promise<void>;
let port: number;
if (kind === 'sink') {
  const sink = await listenSink();
  port = portOf(sink);
  stop = () => new Promise((resolve) => sink.close(() => resolve()));
} else {
  const dir = kind === 'fs' ? mkdtempSync(path.join(os.tmpdir(), 'mqlite-wire-')) : undefined;
  const broker = await Broker.open(dir ? { storage: fsStorage({ dir }) } : {});
  const server = await listen(broker);
  port = server.port;
  stop = async () => {
    await server.close();
    await broker.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  };
}
process.on('message', async (message) => {
  if (message === 'usage') {
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc?.();
    }
    const m = process.memoryUsage();
    process.send!({ heap: m.heapUsed + m.arrayBuffers, rss: m.rss } satisfies Usage);
  } else if (message === 'exit') {
    await stop();
    process.exit(0);
  }
});
process.send!({ port });
