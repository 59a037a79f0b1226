/**
 * better-sqlite3, the peer the fs and LVQ benchmarks measure beside mqlite, is not among the
 * project's dependencies: it compiles from source on install, and only these rows need it.
 * `npm install --no-save better-sqlite3@12` brings it in; without it those rows are skipped.
 */
import type BetterSqlite3 from 'better-sqlite3';

export type Sqlite = typeof BetterSqlite3;

/** better-sqlite3's constructor, or undefined (and a line saying so) when it is not installed. */
export async function loadSqlite(): Promise<Sqlite | undefined> {
  try {
    return (await import('better-sqlite3')).default;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    console.error(
      'better-sqlite3 is not installed: its rows are skipped (npm install --no-save better-sqlite3@12 adds them)',
    );
    return undefined;
  }
}
