// Runs every file in examples/ in its own process and fails if any of them fails.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const files = readdirSync(new URL('../examples/', import.meta.url))
  .filter((f) => f.endsWith('.ts'))
  .sort();
let failed = 0;
for (const file of files) {
  process.stdout.write(`\n--- examples/${file}\n`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', `examples/${file}`], {
    stdio: 'inherit',
    timeout: 60_000,
  });
  if (run.status !== 0) {
    failed++;
    process.stdout.write(`examples/${file} failed (exit ${run.status ?? run.signal})\n`);
  }
}
process.stdout.write(`\nexamples: ${files.length - failed} passed, ${failed} failed\n`);
process.exit(failed === 0 ? 0 : 1);
