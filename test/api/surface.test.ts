/**
 * The public surface of the package: every name each entry point (`mqlite`, `mqlite/testing`,
 * `mqlite/testing/server`, `mqlite/server`) exports, and what it is, compared with
 * test/api/surface.txt. A change to what users can import is a deliberate one:
 * `UPDATE_API_SURFACE=1 npx vitest run test/api` writes the file afresh, and the diff shows in
 * review.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const report = new URL('surface.txt', import.meta.url);
const ENTRIES = {
  mqlite: 'src/index.ts',
  'mqlite/testing': 'src/testing/index.ts',
  'mqlite/testing/server': 'src/testing/server/index.ts',
  'mqlite/server': 'src/server/index.ts',
};

/** What an exported symbol is, in a word. */
function kindOf(symbol: ts.Symbol): string {
  const flags = symbol.flags;
  if (flags & ts.SymbolFlags.Class) return 'class';
  if (flags & ts.SymbolFlags.Function) return 'function';
  if (flags & ts.SymbolFlags.Enum) return 'enum';
  if (flags & ts.SymbolFlags.Interface) return 'interface';
  if (flags & ts.SymbolFlags.TypeAlias) return 'type';
  if (flags & ts.SymbolFlags.Variable) return 'const';
  return 'other';
}

function surface(): string {
  const config = ts.getParsedCommandLineOfConfigFile(
    `${root}tsconfig.json`,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  )!;
  const files = Object.values(ENTRIES).map((file) => `${root}${file}`);
  const program = ts.createProgram(files, { ...config.options, noEmit: true });
  const checker = program.getTypeChecker();
  const lines: string[] = [];
  for (const [entry, file] of Object.entries(ENTRIES)) {
    const source = program.getSourceFile(`${root}${file}`)!;
    const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(source)!);
    lines.push(`# ${entry}`);
    for (const symbol of exports) {
      const target =
        symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      lines.push(`${kindOf(target)} ${symbol.name}`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

it('the package exports what test/api/surface.txt lists, and nothing else', () => {
  const actual = surface();
  if (process.env.UPDATE_API_SURFACE) writeFileSync(report, actual);
  expect(actual).toBe(readFileSync(report, 'utf8'));
  for (const internal of [
    'assertOpen',
    'inequivalentArg',
    'invalidArg',
    'queueResource',
    'resourceName',
    'withContext',
  ]) {
    expect(actual).not.toMatch(new RegExp(`^\\w+ ${internal}$`, 'm'));
  }
});
