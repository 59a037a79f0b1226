/**
 * Who may connect, to which virtual hosts, and what each may do there: users with passwords
 * (plain, or hashed as RabbitMQ's definitions hold them) and their permissions (permissions.ts),
 * changed while the server runs by the management API. Passwords are compared in constant time;
 * a user named in `loopbackUsers` logs in from the loopback interface only, as RabbitMQ's
 * `loopback_users` (default `guest`) does.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { NotFoundError } from '../errors.js';
import {
  expandTopicVariables,
  type PermissionPatterns,
  Permissions,
  type TopicPatterns,
} from './permissions.js';

/** RabbitMQ's hashing algorithms: the hash of a password is sha(salt + password), base64 of salt + hash. */
const HASHES: Readonly<Record<string, string>> = {
  rabbit_password_hashing_sha256: 'sha256',
  rabbit_password_hashing_sha512: 'sha512',
  rabbit_password_hashing_md5: 'md5',
};
/** The algorithm of a user given without one, and of every password hashed here. */
const DEFAULT_HASHING = 'rabbit_password_hashing_sha256';
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

/** A user as RabbitMQ's definitions and management API show it. */
export interface UserRecord {
  readonly name: string;
  /** Base64 of a salt and the salted hash; `''`: no password, the user cannot log in with one. */
  readonly passwordHash: string;
  readonly hashingAlgorithm: string;
  /** RabbitMQ's `administrator`, `monitoring`, `management`, ... */
  readonly tags: readonly string[];
}

/** What {@link Users.putUser} sets: a password to hash, or a hash as definitions hold it. */
export type UserCredentials =
  | { readonly password: string }
  | { readonly passwordHash: string; readonly hashingAlgorithm?: string };

/** What the server decides at connection.open. */
export type VhostAccess = 'granted' | 'not-found' | 'refused';

interface Account extends UserRecord {
  readonly check: PasswordCheck;
}

/** @internal A user's permissions in a vhost as they are now: a change applies to the next check. */
export interface LivePermissions {
  readonly current: Permissions;
}

/**
 * The users of a server, the virtual hosts each may use and what each may do there. Build it
 * from plain passwords ({@link Users.fromPasswords}) or from RabbitMQ definitions
 * ({@link Users.fromDefinitions}); change it while the server runs with {@link Users.putUser},
 * {@link Users.deleteUser}, {@link Users.setPermissions} and {@link Users.clearPermissions}, as
 * the management API does: a deleted user's connections are closed, changed permissions apply to
 * the next operation of every connection.
 */
export class Users {
  readonly #accounts = new Map<string, Account>();
  /** The virtual hosts that exist, `/` first when it is one of them. */
  readonly vhosts: readonly string[];
  /** Permission entries by user and vhost (joined by NUL, which neither name holds). */
  readonly #grants = new Map<string, PermissionGrant>();
  /** Topic permissions by user and vhost, each by exchange. */
  readonly #topics: ReadonlyMap<string, ReadonlyMap<string, TopicPatterns>>;
  /** The permissions connections read, by user and vhost, kept current as grants change. */
  readonly #live = new Map<string, { current: Permissions }>();
  readonly #deleted: ((user: string) => void)[] = [];

  private constructor(
    vhosts: readonly string[],
    topics: ReadonlyMap<string, ReadonlyMap<string, TopicPatterns>> = new Map(),
  ) {
    this.vhosts = vhosts;
    this.#topics = topics;
  }

  /**
   * Users with plain passwords, each allowed everything in every vhost of `vhosts` (default
   * `['/']`) and tagged `administrator`.
   */
  static fromPasswords(
    passwords: Readonly<Record<string, string>>,
    vhosts: readonly string[] = ['/'],
  ): Users {
    const users = new Users([...vhosts]);
    for (const [name, password] of Object.entries(passwords)) {
      users.putUser(name, { password }, ['administrator']);
      for (const vhost of vhosts) {
        users.setPermissions(name, vhost, { configure: '.*', write: '.*', read: '.*' });
      }
    }
    return users;
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
    const vhosts: string[] = [];
    for (const [i, entry] of list(defs.vhosts, `${source}: vhosts`)) {
      vhosts.push(
        text(asObject(entry, `${source}: vhosts[${i}]`).name, `${source}: vhosts[${i}].name`),
      );
    }
    vhosts.sort((a, b) => (a === '/' ? -1 : b === '/' ? 1 : a < b ? -1 : a > b ? 1 : 0));
    const users = new Users(vhosts, topicPermissions(defs.topic_permissions, vhosts, source));
    for (const [i, entry] of list(defs.users, `${source}: users`)) {
      const user = asObject(entry, `${source}: users[${i}]`);
      const name = text(user.name, `${source}: users[${i}].name`);
      const where = `${source}: user '${name}'`;
      const hashingAlgorithm = user.hashing_algorithm ?? DEFAULT_HASHING;
      if (typeof hashingAlgorithm !== 'string' || !Object.hasOwn(HASHES, hashingAlgorithm)) {
        throw new TypeError(
          `${where}: hashing_algorithm must be one of ${Object.keys(HASHES).join(', ')}, got ${JSON.stringify(hashingAlgorithm)}`,
        );
      }
      const passwordHash = user.password_hash ?? '';
      if (typeof passwordHash !== 'string') {
        throw new TypeError(`${where}: password_hash must be a string`);
      }
      if (hashedCheck(passwordHash, hashingAlgorithm) === undefined) {
        throw new TypeError(
          `${where}: password_hash is not base64 of a ${SALT_BYTES}-byte salt and a ${HASHES[hashingAlgorithm]} hash`,
        );
      }
      users.putUser(name, { passwordHash, hashingAlgorithm }, tagsOf(user.tags, `${where}.tags`));
    }
    for (const [i, entry] of list(defs.permissions, `${source}: permissions`)) {
      const where = `${source}: permissions[${i}]`;
      const permission = asObject(entry, where);
      const user = text(permission.user, `${where}.user`);
      const vhost = definedVhost(permission, vhosts, where);
      users.#grant(user, vhost, {
        configure: pattern(permission.configure, `${where}.configure`),
        write: pattern(permission.write, `${where}.write`),
        read: pattern(permission.read, `${where}.read`),
      });
    }
    return users;
  }

  /** The user names, in the order they were added. */
  get names(): string[] {
    return [...this.#accounts.keys()];
  }

  /** The users, as definitions list them. */
  get users(): UserRecord[] {
    return [...this.#accounts.values()].map(({ name, passwordHash, hashingAlgorithm, tags }) => ({
      name,
      passwordHash,
      hashingAlgorithm,
      tags,
    }));
  }

  /** The tags of `user` (empty for an unknown one). */
  tags(user: string): readonly string[] {
    return this.#accounts.get(user)?.tags ?? [];
  }

  /** The permissions granted, one entry per user and vhost, as definitions list them. */
  get grants(): readonly PermissionGrant[] {
    return [...this.#grants.values()];
  }

  /**
   * Adds a user, or replaces its password and tags: `password` is hashed with
   * `rabbit_password_hashing_sha256`, as RabbitMQ hashes it; a `passwordHash` is kept as given
   * with its algorithm (default sha256), and one that is not a salt and a hash of that algorithm
   * never matches a password.
   * @returns whether the user is new.
   */
  putUser(name: string, credentials: UserCredentials, tags: readonly string[] = []): boolean {
    const [passwordHash, hashingAlgorithm] =
      'password' in credentials
        ? [hashPassword(credentials.password), DEFAULT_HASHING]
        : [credentials.passwordHash, credentials.hashingAlgorithm ?? DEFAULT_HASHING];
    const check = hashedCheck(passwordHash, hashingAlgorithm) ?? (() => false);
    const added = !this.#accounts.has(name);
    this.#accounts.set(name, { name, passwordHash, hashingAlgorithm, tags: [...tags], check });
    return added;
  }

  /**
   * Deletes a user with its permissions; the server closes its connections, as RabbitMQ does.
   * @returns false when there was no such user.
   */
  deleteUser(name: string): boolean {
    if (!this.#accounts.delete(name)) return false;
    for (const vhost of this.vhosts) this.clearPermissions(name, vhost);
    for (let i = 0; i < this.#deleted.length; i++) this.#deleted[i]!(name);
    return true;
  }

  /**
   * Grants `user` the `configure`, `write` and `read` patterns in `vhost`, replacing what it had
   * there: its connections check their next operation against them.
   * @returns whether the user had no permissions in the vhost before.
   * @throws NotFoundError for a user or vhost that does not exist; SyntaxError for a pattern that
   *   is no regular expression.
   */
  setPermissions(user: string, vhost: string, patterns: PermissionPatterns): boolean {
    if (!this.#accounts.has(user)) throw new NotFoundError(`no user '${user}'`);
    if (!this.vhosts.includes(vhost)) throw new NotFoundError(`no vhost '${vhost}'`);
    return this.#grant(user, vhost, {
      configure: patterns.configure,
      write: patterns.write,
      read: patterns.read,
    });
  }

  /**
   * Takes `user`'s permissions in `vhost` away: its connections there are refused their next
   * operation, as RabbitMQ refuses them.
   * @returns false when it had none there.
   */
  clearPermissions(user: string, vhost: string): boolean {
    const key = `${user}\0${vhost}`;
    if (!this.#grants.delete(key)) return false;
    const live = this.#live.get(key);
    if (live) live.current = this.#compiled(user, vhost, NOTHING);
    return true;
  }

  /** @internal Tells `listener` the name of each user deleted; returns its removal. */
  onDeleted(listener: (user: string) => void): () => void {
    this.#deleted.push(listener);
    return () => {
      const at = this.#deleted.indexOf(listener);
      if (at >= 0) this.#deleted.splice(at, 1);
    };
  }

  /** Whether `password` is the password of `user` (constant time in the password). */
  authenticate(user: string, password: string): boolean {
    const account = this.#accounts.get(user);
    return account?.check(password) === true;
  }

  /** Whether `user` may open `vhost`, or why not. */
  access(user: string, vhost: string): VhostAccess {
    if (!this.vhosts.includes(vhost)) return 'not-found';
    return this.#grants.has(`${user}\0${vhost}`) ? 'granted' : 'refused';
  }

  /**
   * @internal What `user` may do in `vhost` now, once {@link access} granted it.
   * @throws RangeError when it did not.
   */
  permissions(user: string, vhost: string): Permissions {
    return this.live(user, vhost).current;
  }

  /**
   * @internal What `user` may do in `vhost`, kept current as its permissions change: the
   * server's connections check each method against it.
   * @throws RangeError when {@link access} did not grant it.
   */
  live(user: string, vhost: string): LivePermissions {
    const key = `${user}\0${vhost}`;
    const grant = this.#grants.get(key);
    if (!grant) throw new RangeError(`user '${user}' has no permissions in vhost '${vhost}'`);
    let live = this.#live.get(key);
    if (!live) this.#live.set(key, (live = { current: this.#compiled(user, vhost, grant) }));
    return live;
  }

  #grant(user: string, vhost: string, patterns: PermissionPatterns): boolean {
    const key = `${user}\0${vhost}`;
    const compiled = this.#compiled(user, vhost, patterns);
    const added = !this.#grants.has(key);
    this.#grants.set(key, { user, vhost, ...patterns });
    const live = this.#live.get(key);
    if (live) live.current = compiled;
    return added;
  }

  /** Everything granted and no topic narrowing is {@link Permissions.ALL}: nothing to check. */
  #compiled(user: string, vhost: string, patterns: PermissionPatterns): Permissions {
    const topics = this.#topics.get(`${user}\0${vhost}`);
    const all = patterns.configure === '.*' && patterns.write === '.*' && patterns.read === '.*';
    if (all && topics === undefined) return Permissions.ALL;
    return Permissions.of(user, vhost, patterns, topics);
  }
}

const NOTHING: PermissionPatterns = { configure: '', write: '', read: '' };

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

/**
 * The check of a stored hash: undefined when it is not base64 of a salt and a hash of its
 * algorithm; the empty hash of a user without a password never matches, as in RabbitMQ.
 */
function hashedCheck(stored: string, algorithm: string): PasswordCheck | undefined {
  if (stored === '') return () => false;
  const hash = Object.hasOwn(HASHES, algorithm) ? HASHES[algorithm]! : undefined;
  if (hash === undefined) return undefined;
  const bytes = Buffer.from(stored, 'base64');
  if (bytes.length !== SALT_BYTES + createHash(hash).digest().length) return undefined;
  if (bytes.toString('base64') !== stored) return undefined;
  const salt = bytes.subarray(0, SALT_BYTES);
  const expected = bytes.subarray(SALT_BYTES);
  return (password) => timingSafeEqual(saltedHash(hash, salt, password), expected);
}

function saltedHash(hash: string, salt: Buffer, password: string): Buffer {
  return createHash(hash).update(salt).update(password, 'utf8').digest();
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
