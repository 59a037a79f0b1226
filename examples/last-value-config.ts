/**
 * The Qpid broker's last-value queue, declared from a config file the way its virtual-host
 * config declares it: an LVQ keyed on the `ISIN` header, bound to `amq.direct` under its own
 * name. Publishing to `amq.direct` keeps only the latest price of each instrument.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker, type LastValueQueue } from 'mqlite';

const dir = mkdtempSync(join(tmpdir(), 'mqlite-lvq-config-'));
const config = join(dir, 'virtualhost.json');
writeFileSync(
  config,
  JSON.stringify({
    queues: { prices: { type: 'lvq', lvqKey: 'ISIN', exchange: 'amq.direct' } },
  }),
);

try {
  await using broker = await Broker.open({ config });
  console.log('prices is bound:', broker.bindings('prices'));
  const direct = await broker.directExchange('amq.direct');
  const ticks: [string, number][] = [
    ['GB00B03MLX29', 2480],
    ['US0378331005', 17890],
    ['GB00B03MLX29', 2495],
    ['GB00B03MLX29', 2501],
  ];
  for (const [isin, pence] of ticks) {
    await direct.publish(String(pence), { routingKey: 'prices', headers: { ISIN: isin } });
  }
  const prices = (await broker.queue('prices', { passive: true })) as LastValueQueue;
  for (let m = await prices.get(); m; m = await prices.get()) {
    console.log(`${m.properties.headers?.ISIN}: ${m.bodyString()}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
