/**
 * `mqlite peek <dir> <queue>`: the messages a queue holds, with properties and bodies, read
 * without changing anything: no lock taken, no recovery cut written, no offset stored, nothing
 * acknowledged. A directory a live process holds is refused, since what it has not written yet
 * would be missing or read as torn.
 */
import path from 'node:path';
import { lockHolder } from '../storage/fs/index.js';
import { type CliIo, type Command, EXIT, UsageError } from './command.js';
import { vhostDirectories } from './data-directories.js';
import { parseDirectoryArgs } from './directory-args.js';
import { peekRemote } from './peek-remote.js';
import { counted, jsonOf, textOrHex, writeJson } from './render.js';
import { logsOf, messageOf, readStoredDirectory, type StoredRecord } from './stored-directory.js';

const USAGE = `Usage: mqlite peek <dir> <queue> [--from first|N] [--limit 10] [--json]
       mqlite peek --url <management url> <queue> [--vhost /] [--limit 10] [--json]

Prints the messages of a queue: offset, time stored, exchange, routing key, properties and
body (UTF-8 text when it is valid UTF-8, hex otherwise). Changes nothing: no message is
acknowledged, no offset stored. Refused while a process holds the directory: for a running
server, give --url, its management API (serve --management-port), and the messages are got
and requeued through it, as RabbitMQ's "Get messages" does.

Options:
  --from first|N   start at the first message (default) or at offset N
  --limit N        print at most N messages (default 10)
  --json           print one JSON document instead of text
  --url <url>      a running server's management API, with credentials
                   (http://guest:guest@127.0.0.1:15672)
  --vhost <v>      with --url: the queue's vhost (default /)
`;

interface Peeked {
  readonly log: string;
  readonly offset: number;
  readonly stored: string;
  readonly exchange?: string;
  readonly routingKey?: string;
  readonly properties?: unknown;
  readonly encoding: 'utf8' | 'hex';
  readonly body: string;
}

function peeked(log: string, offset: number, timestamp: number, record: StoredRecord): Peeked {
  const message = messageOf(record);
  const body = textOrHex(message ? message.body : (record as Uint8Array));
  return {
    log,
    offset,
    stored: new Date(timestamp).toISOString(),
    ...(message && {
      exchange: message.exchange,
      routingKey: message.routingKey,
      properties: jsonOf(message.properties),
    }),
    encoding: body.encoding,
    body: body.text,
  };
}

function parseOptions(args: readonly string[]) {
  const { values, positionals } = parseDirectoryArgs(
    args,
    { from: { type: 'string', default: 'first' }, limit: { type: 'string', default: '10' } },
    { count: 2, what: 'a data directory and a queue' },
  );
  const from = values.from === 'first' ? undefined : Number(values.from);
  if (from !== undefined && !(Number.isSafeInteger(from) && from >= 1)) {
    throw new UsageError(`--from must be 'first' or an offset (1 or more), got '${values.from}'`);
  }
  const limit = Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit < 0) {
    throw new UsageError(`--limit must be a number of messages, got '${values.limit}'`);
  }
  return { dir: positionals[0]!, queue: positionals[1]!, from, limit, json: values.json };
}

function printText(io: CliIo, queue: string, total: number, messages: readonly Peeked[]): void {
  const out = [`${queue}: ${counted(total, 'message')}, ${messages.length} shown`];
  for (const m of messages) {
    out.push('', `#${m.offset}  ${m.log}  stored ${m.stored}`);
    if (m.exchange !== undefined) {
      out.push(`  exchange '${m.exchange}', routing key '${m.routingKey}'`);
      const properties = JSON.stringify(m.properties);
      if (properties !== '{}') out.push(`  properties ${properties}`);
    }
    out.push(m.encoding === 'utf8' ? `  ${m.body}` : `  (hex) ${m.body}`);
  }
  io.stdout.write(`${out.join('\n')}\n`);
}

export const peek: Command = {
  summary: "print a queue's messages without consuming them",
  usage: USAGE,
  async run(args, io) {
    if (args.some((arg) => arg === '--url' || arg.startsWith('--url=')))
      return peekRemote(args, io);
    const options = parseOptions(args);
    vhostDirectories(options.dir, '/');
    // Checked before anything is read: a live writer's files are not to be read as torn.
    const holder = lockHolder(path.resolve(options.dir));
    if (holder !== undefined) {
      io.stderr.write(
        holder === 0
          ? `mqlite peek: ${options.dir} is locked by a LOCK file that names no process; remove it if no process uses the directory\n`
          : `mqlite peek: ${options.dir} is in use by process ${holder}; peek a running server through its management API with --url (serve --management-port), stop it first, or use 'mqlite inspect', which reads a directory in use\n`,
      );
      return EXIT.failure;
    }
    const stored = await readStoredDirectory(options.dir);
    try {
      const entry = stored.entries.find((e) => e.name === options.queue);
      if (!entry) {
        io.stderr.write(`mqlite peek: no queue '${options.queue}' in ${options.dir}\n`);
        return EXIT.failure;
      }
      const messages: Peeked[] = [];
      let total = 0;
      for (const name of await logsOf(entry)) {
        const log = await stored.openLog(entry, name);
        total += log.count;
        const cursor = log.cursor(options.from ?? log.firstOffset);
        while (messages.length < options.limit && cursor.next()) {
          messages.push(peeked(name, cursor.offset, cursor.timestamp, cursor.record));
        }
      }
      if (options.json)
        writeJson(io.stdout, { queue: entry.name, messages: total, shown: messages });
      else printText(io, entry.name, total, messages);
      return EXIT.ok;
    } finally {
      await stored.close();
    }
  },
};
