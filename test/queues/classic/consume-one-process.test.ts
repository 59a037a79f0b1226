import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const script = fileURLToPath(new URL('./fixtures/consume-one-script.ts', import.meta.url));

it('a consumeOne with a timeout keeps a script alive until it rejects with TimeoutError', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script]);
  expect(stdout.trim()).toBe('TimeoutError');
});
