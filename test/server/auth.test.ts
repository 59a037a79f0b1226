import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/errors.js';
import { hashPassword, isLoopback, Users } from '../../src/server/auth.js';
import { Permissions } from '../../src/server/permissions.js';

const ALL = { configure: '.*', write: '.*', read: '.*' };
const definitions = (users: unknown[], permissions: unknown[] = []) => ({
  users,
  vhosts: [{ name: 'orders' }, { name: '/' }],
  permissions,
});

describe('Users from RabbitMQ definitions', () => {
  it('checks a sha256 password_hash: base64 of the salt and sha256(salt + password)', () => {
    const salt = Buffer.from([1, 2, 3, 4]);
    const hash = createHash('sha256').update(salt).update('pw').digest();
    expect(hashPassword('pw', salt)).toBe(Buffer.concat([salt, hash]).toString('base64'));
    const users = Users.fromDefinitions(
      definitions([
        {
          name: 'app',
          password_hash: hashPassword('pw'),
          hashing_algorithm: 'rabbit_password_hashing_sha256',
        },
      ]),
    );
    expect(users.authenticate('app', 'pw')).toBe(true);
    expect(users.authenticate('app', 'pW')).toBe(false);
    expect(users.authenticate('other', 'pw')).toBe(false);
  });

  it('reads sha512 hashes too, and a user without a hash cannot log in', () => {
    const salt = Buffer.from([9, 9, 9, 9]);
    const hash = createHash('sha512').update(salt).update('long').digest();
    const users = Users.fromDefinitions(
      definitions([
        {
          name: 'a',
          password_hash: Buffer.concat([salt, hash]).toString('base64'),
          hashing_algorithm: 'rabbit_password_hashing_sha512',
        },
        { name: 'b', password_hash: '' },
      ]),
    );
    expect(users.authenticate('a', 'long')).toBe(true);
    expect(users.authenticate('b', '')).toBe(false);
  });

  it('grants the vhosts of its permissions, / first among the vhosts', () => {
    const users = Users.fromDefinitions(
      definitions([{ name: 'app', password_hash: '' }], [{ user: 'app', vhost: 'orders', ...ALL }]),
    );
    expect(users.vhosts).toEqual(['/', 'orders']);
    expect(users.access('app', 'orders')).toBe('granted');
    expect(users.access('app', '/')).toBe('refused');
    expect(users.access('app', 'nowhere')).toBe('not-found');
    expect(() => users.permissions('app', '/')).toThrow(
      new RangeError("user 'app' has no permissions in vhost '/'"),
    );
  });

  it('grants users with plain passwords everything in every vhost', () => {
    const users = Users.fromPasswords({ app: 'pw' }, ['/', 'orders']);
    expect(users.access('app', 'orders')).toBe('granted');
    expect(users.permissions('app', 'orders')).toBe(Permissions.ALL);
  });

  it('adds, changes and deletes users and their permissions while the server runs', () => {
    const users = Users.fromPasswords({ admin: 'a' });
    expect(users.putUser('app', { password: 'pw' }, ['management'])).toBe(true);
    expect(users.authenticate('app', 'pw')).toBe(true);
    expect(users.access('app', '/')).toBe('refused');
    expect(() => users.setPermissions('ghost', '/', ALL)).toThrow(
      new NotFoundError("no user 'ghost'"),
    );
    expect(() => users.setPermissions('app', 'nowhere', ALL)).toThrow(NotFoundError);
    expect(users.setPermissions('app', '/', { ...ALL, configure: '^app\\.' })).toBe(true);
    const live = users.live('app', '/');
    const before = live.current;
    expect(users.setPermissions('app', '/', ALL)).toBe(false);
    expect(live.current).not.toBe(before);
    expect(live.current).toBe(Permissions.ALL);
    expect(users.putUser('app', { passwordHash: '' }, [])).toBe(false);
    expect(users.authenticate('app', 'pw')).toBe(false);
    const deleted: string[] = [];
    users.onDeleted((name) => deleted.push(name));
    expect(users.deleteUser('app')).toBe(true);
    expect(users.deleteUser('app')).toBe(false);
    expect(deleted).toEqual(['app']);
    expect(users.grants.map((g) => g.user)).toEqual(['admin']);
  });

  it('names the entry of a malformed file', () => {
    expect(() => Users.fromDefinitions({ users: {} }, 'f.json')).toThrow(
      'f.json: users must be an array',
    );
    expect(() =>
      Users.fromDefinitions(definitions([{ name: 'x', hashing_algorithm: 'bcrypt' }]), 'f.json'),
    ).toThrow("f.json: user 'x': hashing_algorithm must be one of");
    expect(() =>
      Users.fromDefinitions(definitions([], [{ user: 'x', vhost: 'gone', ...ALL }]), 'f.json'),
    ).toThrow("f.json: permissions[0]: vhost 'gone' is not in the definitions' vhosts");
    expect(() =>
      Users.fromDefinitions(definitions([], [{ user: 'x', vhost: '/', read: '.*' }]), 'f.json'),
    ).toThrow(new TypeError('f.json: permissions[0].configure must be a string'));
    expect(() =>
      Users.fromDefinitions(
        definitions([], [{ user: 'x', vhost: '/', ...ALL, write: '(unclosed' }]),
        'f.json',
      ),
    ).toThrow('f.json: permissions[0].write is not a regular expression');
  });
});

describe('isLoopback', () => {
  it('knows 127/8, ::1 and their IPv4-mapped form', () => {
    expect(['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1'].map(isLoopback)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['10.0.0.1', '::ffff:10.0.0.1', 'fe80::1', undefined].map(isLoopback)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});
