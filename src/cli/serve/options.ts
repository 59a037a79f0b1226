/** The options of `mqlite serve`, read from its arguments and checked before anything opens. */
import { readFileSync } from 'node:fs';
import { Users } from '../../server/auth.js';
import type { DiskAlarmOptions } from '../../server/disk-alarm.js';
import { parseBytes } from '../../server/information-units.js';
import type { ServerLimits } from '../../server/limits.js';
import type { MemoryAlarmOptions } from '../../server/memory-alarm.js';
import { UsageError } from '../command.js';
import { parseCommandArgs } from '../parse-args.js';
import { exitsWithParent } from './parent-watch.js';

export const SERVE_USAGE = `Usage: mqlite serve [options]

Serves a data directory over AMQP 0-9-1, so any number of processes share its queues.

Options:
  --data <dir>              data directory (created if missing); without it, memory storage
  --port <n>                AMQP port (default 5672; 0 picks a free one)
  --host <address>          interface to listen on (default 127.0.0.1)
  --config <file>           queues to declare in vhost / at start (a Broker config, JSON)
  --definitions <file>      a RabbitMQ definitions file to load into vhost / at start:
                            its queues, exchanges, bindings, policies and shovels
  --shovel <name>=<json>    a shovel of vhost / (repeatable), its definition as
                            rabbitmqctl set_parameter shovel takes it; stored with the
                            data directory, as one set by the API
  --users <file>            users, vhosts and permissions (RabbitMQ definitions, JSON;
                            configure/write/read patterns applied as RabbitMQ does);
                            default: guest/guest in vhost /, allowed everything
  --loopback-users <names>  users who may connect from loopback only, comma-separated
                            (default guest; '' for none)
  --tls-cert <file>         PEM certificate: also serve amqps:// on --tls-port
  --tls-key <file>          PEM private key of --tls-cert
  --tls-port <n>            AMQPS port (default 5671)
  --max-connections <n>     connections open at once (default: no limit)
  --channel-max <n>         channels per connection (default 2047)
  --frame-max <n>           largest frame in bytes, 4096 or more (default 131072)
  --max-message-size <n>    largest message body in bytes (default and most 134217728)
  --heartbeat <seconds>     heartbeat proposed to clients (default 60; 0: none)
  --memory-high-watermark <w>
                            memory alarm: a fraction of the machine's memory (0..1,
                            default 0.4) or bytes (1073741824, 512MiB, 2GB); above it
                            publishers are blocked until memory falls back below
  --disk-free-limit <l>     disk alarm (with --data): bytes free on the data directory's
                            file system (default 50MB; 2GB, 1GiB, ...) or
                            '{mem_relative, 1.0}' (a multiple of the machine's memory);
                            below it publishers are blocked until space is back
  --management-port <n>     also serve RabbitMQ's management HTTP API and Prometheus
                            /metrics on this port (RabbitMQ's is 15672; 0 picks a free one)
  --management-host <addr>  interface of the management listener (default 127.0.0.1)
  --prometheus-port <n>     also serve /metrics alone on this port, as RabbitMQ's
                            Prometheus plugin does on 15692 (needs --management-port)
  --url-file <file>         also write the URL to this file once listening (for a test
                            harness in another language: --port 0, then read the file)
  --verbose                 one line per connection event
  --exit-with-parent        stop, as on SIGTERM, when the process that started serve goes
                            away (default when started by npx or npm; off: --no-exit-with-parent)
  -h, --help                this text

Prints the URL it listens on. SIGINT or SIGTERM closes every connection (320
CONNECTION_FORCED), flushes and closes the storage, and exits 0.
`;

export interface ServeOptions {
  readonly data: string | undefined;
  readonly port: number;
  readonly host: string;
  readonly config: string | undefined;
  readonly definitions: string | undefined;
  /** `--shovel name=json`, in the order given. */
  readonly shovels: readonly { readonly name: string; readonly value: unknown }[];
  readonly users: Users;
  readonly loopbackUsers: readonly string[];
  readonly tls: { readonly cert: Buffer; readonly key: Buffer; readonly port: number } | undefined;
  readonly limits: ServerLimits;
  readonly heartbeat: number;
  readonly memory: MemoryAlarmOptions;
  /** The disk alarm, on the data directory (none without one). */
  readonly disk: DiskAlarmOptions | undefined;
  readonly verbose: boolean;
  /** Whether serve stops when its parent process goes away. */
  readonly exitWithParent: boolean;
  readonly urlFile: string | undefined;
  /** The management listener, when asked for. */
  readonly management:
    | { readonly port: number; readonly host: string; readonly prometheusPort?: number }
    | undefined;
}

/**
 * Reads the arguments, the users file and the TLS files.
 * @throws UsageError for an unknown option or a malformed value; TypeError for a malformed
 *   users file; the file system's error for a file that cannot be read.
 */
export function parseServeOptions(args: readonly string[], env: NodeJS.ProcessEnv): ServeOptions {
  const { values, positionals } = parse(args);
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const cert = values['tls-cert'];
  const key = values['tls-key'];
  if ((cert === undefined) !== (key === undefined)) {
    throw new UsageError('--tls-cert and --tls-key go together');
  }
  if (values['tls-port'] !== undefined && cert === undefined) {
    throw new UsageError('--tls-port needs --tls-cert and --tls-key');
  }
  const loopback = values['loopback-users'];
  if (values['management-port'] === undefined) {
    for (const needs of ['management-host', 'prometheus-port'] as const) {
      if (values[needs] !== undefined) throw new UsageError(`--${needs} needs --management-port`);
    }
  }
  const prometheus = values['prometheus-port'];
  return {
    data: values.data,
    port: integer(values.port, '--port', 5672, 0, 65535),
    host: values.host ?? '127.0.0.1',
    config: values.config,
    definitions: values.definitions,
    shovels: (values.shovel ?? []).map(shovelFlag),
    users:
      values.users === undefined
        ? Users.fromPasswords({ guest: 'guest' })
        : readUsers(values.users),
    loopbackUsers:
      loopback === undefined ? ['guest'] : loopback.split(',').filter((name) => name !== ''),
    tls:
      cert === undefined || key === undefined
        ? undefined
        : {
            cert: readFileSync(cert),
            key: readFileSync(key),
            port: integer(values['tls-port'], '--tls-port', 5671, 0, 65535),
          },
    limits: {
      maxConnections: optionalInteger(values['max-connections'], '--max-connections'),
      channelMax: optionalInteger(values['channel-max'], '--channel-max'),
      frameMax: optionalInteger(values['frame-max'], '--frame-max'),
      maxMessageBytes: optionalInteger(values['max-message-size'], '--max-message-size'),
    },
    heartbeat: integer(values.heartbeat, '--heartbeat', 60, 0, 65535),
    memory: watermark(values['memory-high-watermark']),
    disk: diskFreeLimit(values['disk-free-limit'], values.data),
    verbose: values.verbose === true,
    exitWithParent: exitsWithParent(
      {
        exitWithParent: values['exit-with-parent'] === true,
        noExitWithParent: values['no-exit-with-parent'] === true,
      },
      env,
    ),
    urlFile: values['url-file'],
    management:
      values['management-port'] === undefined
        ? undefined
        : {
            port: integer(values['management-port'], '--management-port', 15672, 0, 65535),
            host: values['management-host'] ?? '127.0.0.1',
            ...(prometheus !== undefined && {
              prometheusPort: integer(prometheus, '--prometheus-port', 15692, 0, 65535),
            }),
          },
  };
}

function parse(args: readonly string[]) {
  return parseCommandArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      data: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      config: { type: 'string' },
      definitions: { type: 'string' },
      shovel: { type: 'string', multiple: true },
      users: { type: 'string' },
      'loopback-users': { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'tls-port': { type: 'string' },
      'max-connections': { type: 'string' },
      'channel-max': { type: 'string' },
      'frame-max': { type: 'string' },
      'max-message-size': { type: 'string' },
      heartbeat: { type: 'string' },
      'memory-high-watermark': { type: 'string' },
      'disk-free-limit': { type: 'string' },
      'url-file': { type: 'string' },
      'management-port': { type: 'string' },
      'management-host': { type: 'string' },
      'prometheus-port': { type: 'string' },
      verbose: { type: 'boolean' },
      'exit-with-parent': { type: 'boolean' },
      'no-exit-with-parent': { type: 'boolean' },
    },
  });
}

/** `--shovel name={"src-uri": …}`: the name, then the definition as JSON. */
function shovelFlag(flag: string): { name: string; value: unknown } {
  const at = flag.indexOf('=');
  if (at <= 0) throw new UsageError(`--shovel takes <name>=<json>, got '${flag}'`);
  const name = flag.slice(0, at);
  try {
    return { name, value: JSON.parse(flag.slice(at + 1)) };
  } catch (error) {
    throw new UsageError(`--shovel ${name}: not valid JSON: ${(error as Error).message}`);
  }
}

function readUsers(file: string): Users {
  const source = `users file ${file}`;
  let definitions: unknown;
  try {
    definitions = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw new TypeError(`${source}: not valid JSON: ${error.message}`);
  }
  return Users.fromDefinitions(definitions, source);
}

function integer(
  value: string | undefined,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) {
    throw new UsageError(`${name} must be an integer ${min}..${max}, got '${value}'`);
  }
  return n;
}

/** A limit given on the command line; its range is checked where limits are. */
function optionalInteger(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`${name} must be a whole number, got '${value}'`);
  return Number(value);
}

/** `--memory-high-watermark`: a fraction 0..1 of the machine's memory, or bytes with a unit. */
function watermark(value: string | undefined): MemoryAlarmOptions {
  if (value === undefined) return {};
  if (/^(0|1)(\.\d+)?$/.test(value) && Number(value) <= 1) return { relative: Number(value) };
  const absolute = parseBytes(value);
  if (absolute === undefined) {
    throw new UsageError(
      `--memory-high-watermark must be a fraction 0..1 or bytes (512MiB, 2GB), got '${value}'`,
    );
  }
  return { absolute };
}

/**
 * `--disk-free-limit`: bytes with a unit, or RabbitMQ's `{mem_relative, N}`; the alarm watches
 * the data directory, so there is none without one.
 */
function diskFreeLimit(
  value: string | undefined,
  data: string | undefined,
): DiskAlarmOptions | undefined {
  if (data === undefined) {
    if (value !== undefined) throw new UsageError('--disk-free-limit needs --data');
    return undefined;
  }
  if (value === undefined) return { dir: data };
  const relative = /^\{\s*mem_relative\s*,\s*(\d+(\.\d+)?)\s*\}$/.exec(value);
  if (relative) return { dir: data, memRelative: Number(relative[1]) };
  const freeLimit = parseBytes(value);
  if (freeLimit === undefined) {
    throw new UsageError(
      `--disk-free-limit must be bytes (50MB, 1GiB) or '{mem_relative, 1.0}', got '${value}'`,
    );
  }
  return { dir: data, freeLimit };
}
