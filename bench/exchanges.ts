/**
 * Exchange routing: routes per second through the registry (each route builds its destination
 * set) for direct, topic, headers and consistent-hash exchanges with many bindings.
 *
 * Standalone: `npx tsx bench/exchanges.ts`.
 */
import { Exchanges } from '../src/exchanges/index.js';
import { bestOf, isMain, printResults, scaled } from './harness.js';
import type { BenchResult } from './types.js';

const ROUTES = scaled(1_000_000);
const BINDINGS = scaled(10_000);

export async function run(): Promise<BenchResult[]> {
  const ex = new Exchanges();
  ex.declare('d', 'direct');
  ex.declare('t', 'topic');
  ex.declare('h', 'headers');
  ex.declare('c', 'x-consistent-hash');
  for (let i = 0; i < 16; i++) ex.bind('c', `q${i}`, '100');
  for (let i = 0; i < BINDINGS; i++) {
    ex.bind('d', `q${i}`, `key.${i}`);
    ex.bind('t', `q${i}`, `stock.${i % 100}.${i}.*`);
    ex.bind('t', `q${i}`, `news.#.${i}`);
  }
  ex.bind('t', 'audit', '#');
  for (let i = 0; i < 100; i++) ex.bind('h', `q${i}`, '', { region: `r${i}`, kind: 'trade' });

  const directKeys = Array.from({ length: 1024 }, (_, i) => `key.${i * 7}`);
  const stockKeys = Array.from({ length: 1024 }, (_, i) => `stock.${i % 100}.${i}.nyse`);
  const newsKeys = Array.from({ length: 1024 }, (_, i) => `news.eu.de.tech.${i}`);
  const headers = Array.from({ length: 1024 }, (_, i) => ({
    region: `r${i % 100}`,
    kind: 'trade',
  }));

  let sink = 0;
  const routes = (exchange: string, keys: string[] | undefined, n = ROUTES) =>
    bestOf(n, () => {
      for (let i = 0; i < n; i++) {
        sink += ex.route(
          exchange,
          keys ? keys[i & 1023]! : '',
          keys ? undefined : headers[i & 1023],
        ).size;
      }
    });

  const results: BenchResult[] = [
    {
      name: 'direct route',
      opsPerSec: await routes('d', directKeys),
      note: `${BINDINGS} bindings`,
    },
    {
      name: 'topic route (* pattern)',
      opsPerSec: await routes('t', stockKeys),
      note: `${2 * BINDINGS + 1} bindings incl. #`,
    },
    {
      name: 'topic route (# pattern)',
      opsPerSec: await routes('t', newsKeys),
      note: `${2 * BINDINGS + 1} bindings incl. #`,
    },
    {
      name: 'consistent-hash route (ring)',
      opsPerSec: await routes('c', directKeys),
      note: '16 queues of weight 100',
    },
    {
      name: 'headers route (x-match all)',
      opsPerSec: await routes('h', undefined, ROUTES / 5),
      note: '100 bindings, all tested',
    },
  ];
  if (sink === 0) throw new Error('routing matched nothing');
  return results;
}

if (isMain(import.meta.url)) printResults(await run());
