/**
 * `mqlite serve`: one process owns a data directory and serves it over AMQP 0-9-1 (and AMQPS),
 * so many processes, in any language, share its durable queues.
 */

import { rename, writeFile } from 'node:fs/promises';
import { listen } from '../management/listen.js';
import type { ConnectionEvent } from '../server/events.js';
import { type CliIo, type Command, EXIT } from './command.js';
import { createDataDirectory } from './data-directories.js';
import { parseServeOptions, SERVE_USAGE } from './serve/options.js';
import { parentGone } from './serve/parent-watch.js';
import { closeVhostBrokers, openVhostBrokers } from './serve/vhost-brokers.js';

export const serve: Command = {
  summary: 'serve a data directory over AMQP 0-9-1 to other processes',
  usage: SERVE_USAGE,
  async run(args: readonly string[], io: CliIo): Promise<number> {
    const options = parseServeOptions(args, io.env);
    if (options.data !== undefined) createDataDirectory(options.data);
    const brokers = await openVhostBrokers(options.users.vhosts, {
      data: options.data,
      config: options.config,
      definitions: options.definitions,
      shovels: options.shovels,
      onError: (vhost, error) =>
        io.stderr.write(
          `mqlite serve: vhost '${vhost}': ${error instanceof Error ? error.message : String(error)}\n`,
        ),
    });
    try {
      const { '/': root, ...vhosts } = Object.fromEntries(brokers);
      const server = await listen(root!, {
        port: options.port,
        host: options.host,
        users: options.users,
        loopbackUsers: options.loopbackUsers,
        vhosts,
        limits: options.limits,
        heartbeat: options.heartbeat,
        memory: options.memory,
        ...(options.disk ? { disk: options.disk } : {}),
        ...(options.tls ? { tls: options.tls } : {}),
        ...(options.management ? { management: options.management } : {}),
        ...(options.verbose
          ? { onConnection: (event: ConnectionEvent) => io.stdout.write(`${describe(event)}\n`) }
          : {}),
      });
      // The file first: whoever read the printed URL finds the file written.
      if (options.urlFile !== undefined) await writeUrlFile(options.urlFile, server.url);
      io.stdout.write(`${server.url}\n`);
      if (server.tlsUrl) io.stdout.write(`${server.tlsUrl}\n`);
      if (server.managementUrl) io.stdout.write(`${server.managementUrl}\n`);
      if (server.prometheusUrl) io.stdout.write(`${server.prometheusUrl}/metrics\n`);
      await aborted(
        options.exitWithParent ? AbortSignal.any([io.signal, parentGone(io.signal)]) : io.signal,
      );
      await server.close();
    } finally {
      await closeVhostBrokers(brokers);
    }
    return EXIT.ok;
  },
};

/** Written whole or not at all: a harness polling for the file never reads half a URL. */
async function writeUrlFile(file: string, url: string): Promise<void> {
  const partial = `${file}.${process.pid}.tmp`;
  await writeFile(partial, `${url}\n`);
  await rename(partial, file);
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => resolve(), { once: true }),
  );
}

/** A log line of a connection event, worded as RabbitMQ logs them. */
function describe(event: ConnectionEvent): string {
  const peer = `${event.peer}${event.tls ? ' (TLS)' : ''}`;
  switch (event.type) {
    case 'accepted':
      return `accepting AMQP connection ${peer}`;
    case 'opened':
      return `connection ${peer}: user '${event.user}' authenticated and granted access to vhost '${event.vhost}'`;
    case 'closed': {
      const who =
        event.user === undefined ? '' : ` (vhost '${event.vhost ?? ''}', user '${event.user}')`;
      return `closing AMQP connection ${peer}${who}${event.reason === undefined ? '' : `: ${event.reason}`}`;
    }
  }
}
