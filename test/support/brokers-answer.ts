/**
 * Vitest's global setup: before any test file runs, checks once that the brokers the run compares
 * mqlite with answer AMQP (RabbitMQ at `AMQP_URL`, by default 127.0.0.1:5672; LavinMQ at
 * `LAVINMQ_URL` when set). When one does not, the run stops with one message that says how to run
 * without it, rather than with a failure per parity test.
 */
import { readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { sep } from 'node:path';

/** The test directories whose files talk to the brokers. */
const BROKER_TESTS = ['test/parity', 'test/server', 'test/differential'];
const PROBE_MS = 5000;

/** Whether an AMQP 0-9-1 server at `url` answers the protocol header within `PROBE_MS`. */
export function answersAmqp(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port || 5672) });
    const done = (answered: boolean) => {
      socket.destroy();
      resolve(answered);
    };
    socket.setTimeout(PROBE_MS, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write(Buffer.from('AMQP\x00\x00\x09\x01', 'latin1')));
    // A method frame (type 1): connection.start.
    socket.once('data', (data) => done(data[0] === 1));
  });
}

/**
 * The brokers a run needs, by name and URL: none when `PARITY_TARGETS` names none of them, or
 * when the files the command line selects (`files`, paths from the project's root) are none of
 * the broker tests.
 */
export function brokersNeeded(
  env: NodeJS.ProcessEnv,
  files: readonly string[],
): Array<{ name: string; url: string }> {
  if (!files.some((file) => BROKER_TESTS.some((dir) => file.startsWith(`${dir}/`)))) return [];
  const chosen = env.PARITY_TARGETS?.split(',').map((name) => name.trim());
  const reference = env.AMQP_URL ? 'amqp-url' : 'rabbitmq';
  const all = [
    { name: reference, url: env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672' },
    ...(env.LAVINMQ_URL ? [{ name: 'lavinmq', url: env.LAVINMQ_URL }] : []),
  ];
  return chosen ? all.filter((b) => chosen.includes(b.name)) : all;
}

/** The test files a run selects: those whose path holds one of the filters, or every one. */
function selectedFiles(filters: readonly string[]): string[] {
  const files = readdirSync('test', { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => `test/${file.split(sep).join('/')}`);
  return filters.length === 0 ? files : files.filter((f) => filters.some((p) => f.includes(p)));
}

/** The positional arguments of `vitest [run] ...`: its file filters. */
function fileFilters(argv: readonly string[]): string[] {
  const args = argv.slice(2).filter((a) => !a.startsWith('-') && !/^\d+$/.test(a));
  const filters = args[0] === 'run' || args[0] === 'watch' ? args.slice(1) : args;
  return filters.map((f) => f.replace(/^\.\//, ''));
}

export default async function setup(): Promise<void> {
  const needed = brokersNeeded(process.env, selectedFiles(fileFilters(process.argv)));
  const silent: string[] = [];
  for (const broker of needed) {
    if (!(await answersAmqp(broker.url))) silent.push(broker.name);
  }
  if (silent.length === 0) return;
  const where = needed
    .filter((b) => silent.includes(b.name))
    .map((b) => `${b.name} at ${b.url.replace(/:[^:@/]*@/, ':***@')}`)
    .join(', ');
  // One message and no stack: what to do is all there is to say.
  console.error(
    `\nNo broker answers: ${where}. The parity tests compare mqlite with it.\n` +
      'Start it (RabbitMQ: rabbitmq-server -detached), or run without it: ' +
      'PARITY_TARGETS=mqlite npm test\n',
  );
  process.exit(1);
}
