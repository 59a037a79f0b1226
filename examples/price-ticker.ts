/**
 * A price ticker on a last-value queue: quotes are keyed by their `symbol` header, so the queue
 * holds only the latest quote of each symbol.
 *
 * - a dashboard browses from the start: it sees each quote that is current when it gets there;
 * - an auditor browses late: it first gets the current quote of each symbol, then new ones;
 * - a slow trader consumes quotes one at a time (prefetch 1), so it never acts on a quote that a
 *   newer one replaced while it was busy.
 *
 * Run: `npx tsx examples/price-ticker.ts`
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { LastValueQueue, type Message } from 'mqlite';

interface Quote {
  symbol: string;
  bid: number;
}

const prices = await LastValueQueue.open({ name: 'prices', key: 'symbol' });

function publish(symbol: string, bid: number): Promise<void> {
  return prices.publish({ symbol, bid } satisfies Quote, { headers: { symbol } });
}

function show(who: string, message: Message): void {
  const { symbol, bid } = message.json<Quote>();
  console.log(`${who.padEnd(9)} ${symbol} ${bid.toFixed(2)}`);
}

const dashboard = prices.browse((m) => show('dashboard', m));

console.log('-- opening quotes, one at a time');
await publish('ACME', 101.5);
await publish('INIT', 42.0);
await publish('ACME', 101.75);
await sleep(1);
console.log(`-- ${prices.messageCount} quotes queued: ACME 101.50 was replaced`);

console.log('-- the auditor joins late');
const auditor = prices.browse((m) => show('auditor', m));
await sleep(1);

console.log('-- a burst: INIT 42.50 is replaced before any browser gets to it');
await Promise.all([publish('BETA', 7.1), publish('INIT', 42.5), publish('INIT', 43.0)]);
await sleep(1);
console.log(`-- the cache says INIT is at ${prices.latest('INIT')?.json<Quote>().bid}`);

console.log('-- a slow trader starts with prefetch 1');
const trader = await prices.subscribe({ prefetch: 1 }, async (m) => {
  show('trader', m);
  await sleep(20);
});
await publish('INIT', 43.5);
await publish('BETA', 7.2);
while (prices.stats().messages > 0) await sleep(5);
console.log('-- the trader took every latest quote; the queue is empty');

await trader.cancel();
await dashboard.cancel();
await auditor.cancel();
await prices.close();
