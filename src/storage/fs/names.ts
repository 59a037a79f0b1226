/**
 * Namespace and log names as directory names. Any string is a valid name, but on disk a name
 * must never leave the data directory (`../x`, `/`, NUL), collide with another on a
 * case-insensitive file system (`Jobs` vs `jobs`), hit a reserved device name (`con`) or exceed
 * the 255-byte limit of a path component.
 *
 * Encoding: lowercase ASCII letters, digits, `-` and inner dots stay as they are, so `prio.000`
 * and `orders` are readable on disk; every other UTF-8 byte becomes `_xx` (two lowercase hex
 * digits). Encoded names longer than {@link MAX_ENCODED} keep a readable prefix and end in `~`
 * and a SHA-256 of the name; those directories also hold the original name in a file, since a
 * hash cannot be decoded. The encoding is injective, and never starts with `~`, which keeps
 * `~`-prefixed names free for the adapter's own files.
 */
import { createHash } from 'node:crypto';

/** Longest encoded name kept whole; longer ones are shortened and hashed. */
const MAX_ENCODED = 120;
const RESERVED = /^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/;
const LONE_SURROGATE = /\p{Surrogate}/u;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The file of a directory whose name is hashed, holding the original name. */
export const NAME_FILE = '~name';

/** Whether `encodeName` shortened this directory name, so its original is stored in a file. */
export function isHashedName(dirName: string): boolean {
  return dirName.includes('~');
}

/** The directory name for `name`. Throws a TypeError for strings that are not valid Unicode. */
export function encodeName(name: string): string {
  if (LONE_SURROGATE.test(name)) {
    throw new TypeError(`name ${JSON.stringify(name)} is not valid Unicode (lone surrogate)`);
  }
  const bytes = Buffer.from(name, 'utf8');
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    const plain =
      (b >= 0x61 && b <= 0x7a) ||
      (b >= 0x30 && b <= 0x39) ||
      b === 0x2d ||
      (b === 0x2e && i > 0 && i < bytes.length - 1);
    out += plain ? String.fromCharCode(b) : `_${b.toString(16).padStart(2, '0')}`;
  }
  if (out === '') return '_';
  if (RESERVED.test(out)) out = `_${out.charCodeAt(0).toString(16)}${out.slice(1)}`;
  if (out.length <= MAX_ENCODED) return out;
  const prefix = out.slice(0, 64).replace(/_[0-9a-f]?$/, '');
  return `${prefix}~${createHash('sha256').update(bytes).digest('hex').slice(0, 40)}`;
}

/** The name a directory stands for, or undefined for names `encodeName` cannot produce. */
export function decodeName(dirName: string): string | undefined {
  if (dirName === '_') return '';
  if (isHashedName(dirName) || !/^(?:[a-z0-9.-]|_[0-9a-f]{2})+$/.test(dirName)) return undefined;
  const bytes: number[] = [];
  for (let i = 0; i < dirName.length; i++) {
    if (dirName[i] === '_') {
      bytes.push(Number.parseInt(dirName.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(dirName.charCodeAt(i));
  }
  let name: string;
  try {
    name = strictUtf8.decode(new Uint8Array(bytes));
  } catch {
    return undefined;
  }
  return encodeName(name) === dirName ? name : undefined;
}
