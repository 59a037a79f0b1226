/** A `Broker.open` that fails releases what it took: the storage it was given is closed. */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Broker, type BrokerOptions } from '../../src/broker/broker.js';
import { fsStorage } from '../../src/storage/fs/index.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-open-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let dirs = 0;

const configFile = (name: string, content: unknown) => {
  const file = path.join(root, name);
  fs.writeFileSync(file, JSON.stringify(content));
  return file;
};

describe('a failed Broker.open', () => {
  const failures: Array<[string, () => Record<string, unknown>]> = [
    ['a missing config file', () => ({ config: path.join(root, 'missing.json') })],
    ['a directory as config', () => ({ config: root })],
    ['an unknown config key', () => ({ config: configFile('key.json', { queus: [] }) })],
    [
      'an invalid config queue',
      () => ({
        config: configFile('invalid.json', {
          queues: [{ name: 'jobs', arguments: { 'x-max-priority': 300 } }],
        }),
      }),
    ],
    ['an unknown option', () => ({ bogus: 1 })],
    ['an onError that is no function', () => ({ onError: 'log' })],
  ];

  it.each(failures)('with %s releases the data directory', async (_what, options) => {
    const dir = path.join(root, `d${dirs++}`);
    await expect(
      Broker.open({ storage: fsStorage({ dir }), ...options() } as BrokerOptions),
    ).rejects.toThrow();
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
    // The corrected retry opens.
    const broker = await Broker.open({ storage: fsStorage({ dir }) });
    await broker.close();
  });

  it('keeps the error that stopped it when closing the storage fails too', async () => {
    const storage = fsStorage({ dir: path.join(root, `d${dirs++}`) });
    const close = storage.close.bind(storage);
    storage.close = async () => {
      await close();
      throw new Error('close failed');
    };
    await expect(
      Broker.open({ storage, bogus: 1 } as BrokerOptions & { bogus: number }),
    ).rejects.toThrow("unknown Broker option 'bogus'");
  });
});

describe('the storage option', () => {
  it.each([
    ['a string', 'x', /got string$/],
    ['null', null, /got object$/],
    ['an object without the methods', { close: async () => {} }, /without namespace\(\)$/],
  ])('refuses %s, saying what a storage is', async (_what, storage, detail) => {
    const open = Broker.open({ storage } as unknown as BrokerOptions);
    await expect(open).rejects.toThrow(TypeError);
    await expect(open).rejects.toThrow(
      /^Broker option storage must be a storage adapter \(fsStorage\(\), memoryStorage\(\) or a StorageAdapter with namespace\(\), listNamespaces\(\), deleteNamespace\(\), close\(\)\)/,
    );
    await expect(open).rejects.toThrow(detail);
  });
});
