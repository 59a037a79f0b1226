// The config of a Vitest example (EXAMPLE_DIR), with `mqlite` and its entries resolved to the
// sources, as the examples' tsconfig paths resolve them for tsx: a user's copy resolves them to
// the installed package.
import { fileURLToPath } from 'node:url';
import { mergeConfig } from 'vitest/config';

const dir = process.env.EXAMPLE_DIR;
if (!dir) throw new Error('EXAMPLE_DIR names the example to run');
const source = (path: string) => fileURLToPath(new URL(`../src/${path}`, import.meta.url));
const example = await import(new URL(`../${dir}/vitest.config.ts`, import.meta.url).href);

export default mergeConfig(example.default, {
  resolve: {
    alias: [
      { find: /^mqlite$/, replacement: source('index.ts') },
      { find: /^mqlite\/server$/, replacement: source('server/index.ts') },
      { find: /^mqlite\/testing$/, replacement: source('testing/index.ts') },
      { find: /^mqlite\/testing\/server$/, replacement: source('testing/server/index.ts') },
    ],
  },
});
