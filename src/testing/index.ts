// The types use Node's (Buffer, AbortSignal): a consumer needs @types/node, not a `types` entry.
/// <reference types="node" preserve="true" />
/** Test helpers for applications and adapters: `import { ManualClock } from 'mqlite/testing'`. */

export { abandonFsStorage as simulateCrash } from '../storage/fs/index.js';
export { type FaultyIo, faultyIo } from './faulty-io.js';
export { ManualClock } from './manual-clock.js';
export {
  type ConformanceTest,
  packedTestRecordCodec,
  type StorageConformanceOptions,
  storageConformance,
  testRecordCodec,
} from './storage-conformance/index.js';
