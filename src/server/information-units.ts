/**
 * Amounts of bytes written as RabbitMQ's configuration writes them (`disk_free_limit.absolute =
 * 50MB`, `vm_memory_high_watermark.absolute = 2GiB`): a whole number, then optionally a unit:
 * `kB`/`KB`, `MB`, `GB` in powers of 1000, `k`/`K`/`kiB`/`KiB`, `M`/`MiB`, `G`/`GiB` in powers
 * of 1024.
 */
const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  kB: 1e3,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  k: 2 ** 10,
  K: 2 ** 10,
  kiB: 2 ** 10,
  KiB: 2 ** 10,
  M: 2 ** 20,
  MiB: 2 ** 20,
  G: 2 ** 30,
  GiB: 2 ** 30,
};

/** The bytes `text` says, or undefined when it is not an amount of bytes. */
export function parseBytes(text: string): number | undefined {
  const match = /^(\d+)([a-zA-Z]*)$/.exec(text.trim());
  const unit = match && Object.hasOwn(UNITS, match[2]!) ? UNITS[match[2]!] : undefined;
  if (!match || unit === undefined) return undefined;
  const bytes = Number(match[1]) * unit;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}
