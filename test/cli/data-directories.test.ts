import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { vhostDirectory } from '../../src/cli/serve/vhost-brokers.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { runCli } from '../support/cli.js';
import { removeDataDirs, tempDir } from '../support/data-dirs.js';

afterAll(removeDataDirs);

/** A data directory as `mqlite serve` leaves it: queue `home` in `/`, `orders` in vhost `shop`. */
async function servedDirectory(): Promise<string> {
  const data = path.join(tempDir(), 'data');
  for (const [vhost, queue] of [
    ['/', 'home'],
    ['shop', 'orders'],
  ] as const) {
    const broker = await Broker.open({ storage: fsStorage({ dir: vhostDirectory(data, vhost) }) });
    await (await broker.queue(queue, { durable: true })).publish(`a message in ${vhost}`);
    await broker.close();
  }
  return data;
}

describe('mqlite inspect and verify on the vhosts of a served directory', () => {
  it('inspect lists the queues of every vhost, or of the one named', async () => {
    const data = await servedDirectory();
    const all = await runCli(['inspect', data]);
    expect(all.code).toBe(0);
    expect(all.stdout).toContain(`(vhost '/', format`);
    expect(all.stdout).toContain(`(vhost 'shop', format`);
    expect(all.stdout).toMatch(/ {2}home {2}classic, durable/);
    expect(all.stdout).toMatch(/ {2}orders {2}classic, durable/);
    const json = JSON.parse((await runCli(['inspect', data, '--json'])).stdout);
    expect(json.vhost).toBe('/');
    expect(json.queues.map((q: { name: string }) => q.name)).toEqual(['home']);
    expect(json.vhosts.map((v: { vhost: string }) => v.vhost)).toEqual(['shop']);
    expect(json.vhosts[0].queues[0]).toMatchObject({ name: 'orders', messages: 1 });
    const shop = await runCli(['inspect', data, '--vhost', 'shop']);
    expect(shop.stdout).toContain('orders');
    expect(shop.stdout).not.toContain('home');
  });

  it('verify checks the files of every vhost, or of the one named', async () => {
    const data = await servedDirectory();
    const all = await runCli(['verify', data]);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/of .*data \(vhost '\/', format/);
    expect(all.stdout).toMatch(/of .*shop \(vhost 'shop', format/);
    const segment = fs
      .readdirSync(path.join(vhostDirectory(data, 'shop')), { recursive: true, encoding: 'utf8' })
      .find((file) => file.endsWith('.seg'));
    expect(segment).toBeDefined();
    fs.appendFileSync(path.join(vhostDirectory(data, 'shop'), segment!), 'garbage');
    const damaged = await runCli(['verify', data, '--json']);
    expect(damaged.code).toBe(1);
    const report = JSON.parse(damaged.stdout);
    expect(report.clean).toBe(false);
    expect(report.vhosts[0]).toMatchObject({ vhost: 'shop', clean: false });
    const home = await runCli(['verify', data, '--vhost', '/']);
    expect(home.code).toBe(0);
  });

  it('refuse, exit 2, a vhost the directory does not hold', async () => {
    const data = await servedDirectory();
    for (const command of ['inspect', 'verify']) {
      const run = await runCli([command, data, '--vhost', 'nope']);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`holds no data of vhost 'nope'`);
      expect(run.stderr).toContain(`its vhosts: '/', 'shop'`);
    }
  });
});

/** The command lines of the commands that read a data directory, on `dir`. */
const readingCommands = (dir: string) => [
  ['inspect', dir],
  ['verify', dir],
  ['peek', dir, 'q'],
];

describe('mqlite inspect, verify and peek on a directory that is not a data directory', () => {
  const notData = () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'src'));
    fs.writeFileSync(path.join(dir, 'src', 'index.ts'), 'export {};\n');
    return dir;
  };
  for (const [what, make] of [
    ['a source folder', notData],
    ['an empty folder', tempDir],
  ] as const) {
    it(`refuse ${what} with a clear message, exit 2`, async () => {
      const dir = make();
      for (const args of readingCommands(dir)) {
        const run = await runCli(args);
        expect(run.code).toBe(2);
        expect(run.stdout).toBe('');
        expect(run.stderr).toBe(
          `mqlite ${args[0]}: '${dir}' is not an mqlite data directory (it has no FORMAT file and no queue in it)\n`,
        );
      }
    });
  }

  it('refuse a directory that does not exist, exit 2, with no INTERNAL_ERROR', async () => {
    const dir = path.join(tempDir(), 'missing');
    for (const args of readingCommands(dir)) {
      const run = await runCli(args);
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(`mqlite ${args[0]}: '${dir}': no such directory\n`);
    }
  });
});
