// The types use Node's (Buffer, AbortSignal): a consumer needs @types/node, not a `types` entry.
/// <reference types="node" preserve="true" />
/**
 * mqlite/server: an AMQP 0-9-1 server in the process, so applications and their AMQP clients
 * connect to a mqlite broker unchanged.
 */

export type { ManagementOptions } from '../management/http-server.js';
export { listen, type Server, type ServerOptions } from '../management/listen.js';
export type { StaticFiles } from '../management/static-files.js';
export {
  hashPassword,
  type PermissionGrant,
  type UserCredentials,
  type UserRecord,
  Users,
  type VhostAccess,
} from './auth.js';
export type { DiskAlarmOptions } from './disk-alarm.js';
export { AmqpException } from './errors.js';
export type { ConnectionEvent } from './events.js';
export {
  type ConnectionInfo,
  type ConnectionMatch,
  type Refusal,
  ServerFaults,
} from './faults.js';
export type { ServerLimits } from './limits.js';
export type { MemoryAlarmOptions } from './memory-alarm.js';
export type { PermissionPatterns } from './permissions.js';
export type { ResourceAlarm } from './resource-alarm.js';
export type { AmqpServer, ListenOptions } from './server.js';
export { Reader, Writer } from './wire/bytes.js';
export {
  type AmqpType,
  type Decimal,
  readTable,
  readTypedTable,
  type TypedTable,
  type TypedValue,
  writeTable,
  writeTypedTable,
} from './wire/field-table.js';
