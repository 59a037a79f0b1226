/**
 * What the parts of one broker share: its storage and records, its exchanges and policies, the
 * damaged queues and its settings. The broker makes it once; its open queues, its publisher and
 * the restore on open each read it.
 */

import type { Clock } from '../clock.js';
import type { ErrorHandler } from '../diagnostics.js';
import type { Exchanges } from '../exchanges/registry.js';
import type { StorageAdapter } from '../storage/types.js';
import type { DamagedQueues } from './damaged-queues.js';
import type { Policies } from './policies.js';
import type { BrokerRegistry } from './registry.js';

export interface BrokerContext {
  readonly storage: StorageAdapter;
  /** The storage the queues get: `storage`, marking a queue's record before its data goes. */
  readonly queueStorage: StorageAdapter;
  readonly clock: Clock;
  readonly registry: BrokerRegistry;
  readonly exchanges: Exchanges;
  readonly policies: Policies;
  readonly damaged: DamagedQueues;
  readonly onError: ErrorHandler;
  readonly strict: boolean;
  readonly vhost: string;
  /** True once the broker's `close()` was called. */
  closed(): boolean;
  /** Tells the broker's `onDeleted` listeners that a queue or exchange is gone. */
  deleted(kind: 'queue' | 'exchange', name: string): void;
}
