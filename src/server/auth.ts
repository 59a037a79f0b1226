/**
 * Who may connect, to which virtual hosts, and what each may do there: users with passwords
 * (plain, or hashed as RabbitMQ's definitions hold them) and their permissions (permissions.ts). Passwords are compared in constant
 * time; a user named in `loopbackUsers` logs in from the loopback interface only, as RabbitMQ's
 * `loopback_users` (default `guest`) does.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { expandTopicVariables, Permissions, type TopicPatterns } from './permissions.js';

/** RabbitMQ's hashing algorithms: the hash of a password is sha(salt + password), base64 of salt + hash. */
const HASHES: Readonly<Record<string, string>> = {
  rabbit_password_hashing_sha256: 'sha256',
  rabbit_password_hashing_sha512: 'sha512',
  rabbit_password_hashing_md5: 'md5',
};
const SALT_BYTES = 4;

/** Checks a password against what is stored for a user. */
type PasswordCheck = (password: string) => boolean;

/** A user's permissions in one vhost, as a definitions file's `permissions` entry. */
export interface PermissionGrant {
  readonly user: string;
  readonly vhost: string;
  readonly configure: string;
  readonly write: string;
  readonly read: string;
}

/** What the server decides at connection.open. */
export type VhostAccess = 'granted' | 'not-found' | 'refused';

/**
 * The users of a server and the virtual hosts each may use. Build it from plain passwords
 * ({@link Users.fromPasswords}) or from RabbitMQ definitions ({@link Users.fromDefinitions}).
 */
export class Users {
  readonly #checks: ReadonlyMap<string, PasswordCheck>;
  /** Permissions per user and vhost; undefined: every user may do everything in every vhost. */
  readonly #permissions: ReadonlyMap<string, ReadonlyMap<string, Permissions>> | undefined;
  /** The virtual hosts that exist, `/` first when it is one of them. */
  readonly vhosts: readonly string[];
  /** Tags per user (RabbitMQ's `administrator`, `monitoring`, `management`, ...). */
  readonly #tags: ReadonlyMap<string, readonly string[]>;
  /** The permission entries as given, for listing. */
  readonly #grants: readonly PermissionGrant[];

  private constructor(
    checks: ReadonlyMap<string, PasswordCheck>,
    vhosts: readonly string[],
    permissions: ReadonlyMap<string, ReadonlyMap<string, Permissions>> | undefined,
    tags: ReadonlyMap<string, readonly string[]>,
    grants: readonly PermissionGrant[],
  ) {
    this.#checks = checks;
    this.#permissions = permissions;
    this.vhosts = vhosts;
    this.#tags = tags;
    this.#grants = grants;
  }

  /**
   * Users with plain passwords, each allowed everything in every vhost of `vhosts` (default
   * `['/']`).
   */
  static fromPasswords(
    passwords: Readonly<Record<string, string>>,
    vhosts: readonly string[] = ['/'],
  ): Users {
    const checks = new Map<string, PasswordCheck>();
    const tags = new Map<string, readonly string[]>();
    for (const [name, password] of Object.entries(passwords)) {
      const expected = digest(password);
      checks.set(name, (given) => timingSafeEqual(digest(given), expected));
      // Allowed everything, as an administrator is.
      tags.set(name, ['administrator']);
    }
    const grants = [...checks.keys()].flatMap((user) =>
      vhosts.map((vhost) => ({ user, vhost, configure: '.*', write: '.*', read: '.*' })),
    );
    return new Users(checks, [...vhosts], undefined, tags, grants);
  }

  /**
   * Users, vhosts and permissions from RabbitMQ definitions (`rabbitmqctl export_definitions`
   * writes them): `users` with `password_hash` and `hashing_algorithm`, `vhosts`, and
   * `permissions` granting a user a vhost with its `configure`, `write` and `read` patterns, and
   * `topic_permissions` narrowing them on one topic exchange with `write` and `read` patterns for
   * routing and binding keys (applied as RabbitMQ applies them, see `Permissions`). Other keys
   * (queues, policies, ...) are ignored.
   *
   * @throws TypeError for definitions of the wrong shape or a pattern that is no regular
   *   expression, naming `source` and the entry.
   */
  static fromDefinitions(definitions: unknown, source = 'definitions'): Users {
    const defs = asObject(definitions, source);
    const checks = new Map<string, PasswordCheck>();
    const tags = new Map<string, readonly string[]>();
    const grants: PermissionGrant[] = [];
    for (const [i, entry] of list(defs.users, `${source}: users`)) {
      const user = asObject(entry, `${source}: users[${i}]`);
      const name = text(user.name, `${source}: users[${i}].name`);
      checks.set(name, hashedCheck(user, `${source}: user '${name}'`));
      tags.set(name, tagsOf(user.tags, `${source}: user '${name}'.tags`));
    }
    const vhosts: string[] = [];
    for (const [i, entry] of list(defs.vhosts, `${source}: vhosts`)) {
      vhosts.push(
        text(asObject(entry, `${source}: vhosts[${i}]`).name, `${source}: vhosts[${i}].name`),
      );
    }
    const topics = topicPermissions(defs.topic_permissions, vhosts, source);
    const permissions = new Map<string, Map<string, Permissions>>();
    for (const [i, entry] of list(defs.permissions, `${source}: permissions`)) {
      const where = `${source}: permissions[${i}]`;
      const permission = asObject(entry, where);
      const user = text(permission.user, `${where}.user`);
      const vhost = definedVhost(permission, vhosts, where);
      const patterns = {
        configure: pattern(permission.configure, `${where}.configure`),
        write: pattern(permission.write, `${where}.write`),
        read: pattern(permission.read, `${where}.read`),
      };
      grants.push({ user, vhost, ...patterns });
      let granted = permissions.get(user);
      if (!granted) permissions.set(user, (granted = new Map()));
      granted.set(vhost, Permissions.of(user, vhost, patterns, topics.get(`${user}\0${vhost}`)));
    }
    vhosts.sort((a, b) => (a === '/' ? -1 : b === '/' ? 1 : a < b ? -1 : a > b ? 1 : 0));
    return new Users(checks, vhosts, permissions, tags, grants);
  }

  /** The user names, in the order given. */
  get names(): string[] {
    return [...this.#checks.keys()];
  }

  /** The tags of `user` (empty for an unknown one). */
  tags(user: string): readonly string[] {
    return this.#tags.get(user) ?? [];
  }

  /** The permissions granted, one entry per user and vhost, as definitions list them. */
  get grants(): readonly PermissionGrant[] {
    return this.#grants;
  }

  /** Whether `password` is the password of `user` (constant time in the password). */
  authenticate(user: string, password: string): boolean {
    const check = this.#checks.get(user);
    return check?.(password) === true;
  }

  /** Whether `user` may open `vhost`, or why not. */
  access(user: string, vhost: string): VhostAccess {
    if (!this.vhosts.includes(vhost)) return 'not-found';
    if (this.#permissions === undefined) return 'granted';
    return this.#permissions.get(user)?.has(vhost) ? 'granted' : 'refused';
  }

  /**
   * @internal What `user` may do in `vhost`, once {@link access} granted it: the server's
   * connections check each method against it.
   * @throws RangeError when it did not.
   */
  permissions(user: string, vhost: string): Permissions {
    if (this.#permissions === undefined) return Permissions.ALL;
    const permissions = this.#permissions.get(user)?.get(vhost);
    if (!permissions) {
      throw new RangeError(`user '${user}' has no permissions in vhost '${vhost}'`);
    }
    return permissions;
  }
}

/**
 * A password hashed as RabbitMQ's `rabbit_password_hashing_sha256` stores it: base64 of a
 * random 4-byte salt followed by sha256(salt + password), the `password_hash` of a definitions
 * file (what `rabbitmqctl hash_password` prints).
 */
export function hashPassword(password: string, salt: Buffer = randomBytes(SALT_BYTES)): string {
  return Buffer.concat([salt, saltedHash('sha256', salt, password)]).toString('base64');
}

/** Whether `address` (a socket's `remoteAddress`) is on the loopback interface. */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(v4) === 4) return v4.startsWith('127.');
  return address === '::1';
}

function hashedCheck(user: Record<string, unknown>, where: string): PasswordCheck {
  const algorithm = user.hashing_algorithm ?? 'rabbit_password_hashing_sha256';
  const hash =
    typeof algorithm === 'string' && Object.hasOwn(HASHES, algorithm)
      ? HASHES[algorithm]
      : undefined;
  if (hash === undefined) {
    throw new TypeError(
      `${where}: hashing_algorithm must be one of ${Object.keys(HASHES).join(', ')}, got ${JSON.stringify(algorithm)}`,
    );
  }
  const stored = user.password_hash ?? '';
  if (typeof stored !== 'string') throw new TypeError(`${where}: password_hash must be a string`);
  // An empty hash is a user without a password: it cannot log in with one, as in RabbitMQ.
  if (stored === '') return () => false;
  const bytes = Buffer.from(stored, 'base64');
  const length = createHash(hash).digest().length;
  if (bytes.length !== SALT_BYTES + length || bytes.toString('base64') !== stored) {
    throw new TypeError(
      `${where}: password_hash is not base64 of a ${SALT_BYTES}-byte salt and a ${hash} hash`,
    );
  }
  const salt = bytes.subarray(0, SALT_BYTES);
  const expected = bytes.subarray(SALT_BYTES);
  return (password) => timingSafeEqual(saltedHash(hash, salt, password), expected);
}

function saltedHash(hash: string, salt: Buffer, password: string): Buffer {
  return createHash(hash).update(salt).update(password, 'utf8').digest();
}

/** A fixed-length stand-in for a plain password, so comparing two takes the same time. */
function digest(password: string): Buffer {
  return createHash('sha256').update(password, 'utf8').digest();
}

/**
 * The `topic_permissions` of definitions, by user and vhost (joined by NUL, which neither name
 * holds), each a map from exchange to patterns; a later entry for the same exchange replaces an
 * earlier one, as a later `set_topic_permissions` does.
 */
function topicPermissions(
  value: unknown,
  vhosts: readonly string[],
  source: string,
): Map<string, Map<string, TopicPatterns>> {
  const topics = new Map<string, Map<string, TopicPatterns>>();
  for (const [i, entry] of list(value, `${source}: topic_permissions`)) {
    const where = `${source}: topic_permissions[${i}]`;
    const permission = asObject(entry, where);
    const user = text(permission.user, `${where}.user`);
    const vhost = definedVhost(permission, vhosts, where);
    const exchange = text(permission.exchange, `${where}.exchange`);
    // Checked as the regular expressions they become once their variables are replaced.
    const topicPattern = (field: 'write' | 'read') => {
      const given = text(permission[field], `${where}.${field}`);
      pattern(expandTopicVariables(given, user, vhost), `${where}.${field}`);
      return given;
    };
    const patterns = { write: topicPattern('write'), read: topicPattern('read') };
    const key = `${user}\0${vhost}`;
    let byExchange = topics.get(key);
    if (!byExchange) topics.set(key, (byExchange = new Map()));
    byExchange.set(exchange, patterns);
  }
  return topics;
}

/** An entry's `vhost`, which must be one of the definitions' vhosts. */
function definedVhost(
  entry: Record<string, unknown>,
  vhosts: readonly string[],
  where: string,
): string {
  const vhost = text(entry.vhost, `${where}.vhost`);
  if (!vhosts.includes(vhost)) {
    throw new TypeError(`${where}: vhost '${vhost}' is not in the definitions' vhosts`);
  }
  return vhost;
}

function asObject(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`${where} must be a JSON object`);
  }
  return value as Record<string, unknown>;
}

function list(value: unknown, where: string): [number, unknown][] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new TypeError(`${where} must be an array`);
  return value.map((entry, i) => [i, entry]);
}

/** A user's `tags`: comma-separated, as RabbitMQ 3.x exports them, or a list, as 4.x does. */
function tagsOf(value: unknown, where: string): string[] {
  if (value === undefined) return [];
  if (typeof value === 'string')
    return value
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
  if (Array.isArray(value) && value.every((t) => typeof t === 'string')) return [...value];
  throw new TypeError(`${where} must be a string or a list of strings`);
}

function text(value: unknown, where: string): string {
  if (typeof value !== 'string') throw new TypeError(`${where} must be a string`);
  return value;
}

/** A permission's pattern: a string that is a regular expression. */
function pattern(value: unknown, where: string): string {
  const source = text(value, where);
  try {
    new RegExp(source);
  } catch (error) {
    throw new TypeError(`${where} is not a regular expression: ${(error as Error).message}`);
  }
  return source;
}
