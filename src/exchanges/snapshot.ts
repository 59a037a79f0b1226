/** The persisted form of exchanges and their bindings, as JSON a MetaStore keeps. */
import type { JsonValue } from '../storage/types.js';
import { bindingInfo } from './destination-key.js';
import type { ExchangeState } from './exchange-state.js';
import { toJsonTable } from './field-values.js';
import type { ExchangeType } from './types.js';

/** The persisted form of one exchange: its declaration and the bindings whose source it is. */
export interface ExchangeRecord {
  readonly type: ExchangeType;
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly internal: boolean;
  readonly arguments: { readonly [key: string]: JsonValue };
  readonly bindings: readonly {
    readonly destination: string;
    /** Absent for a queue (what every binding was before exchanges could be bound). */
    readonly destinationType?: 'exchange';
    readonly routingKey: string;
    readonly args: { readonly [key: string]: JsonValue };
  }[];
}

/** The persisted form of a registry: durable exchanges by name. */
export type ExchangesSnapshot = { readonly [name: string]: ExchangeRecord };

/** The record of one exchange, with its bindings. */
export function exchangeRecord(state: ExchangeState): ExchangeRecord {
  return {
    type: state.type,
    durable: state.durable,
    autoDelete: state.autoDelete,
    internal: state.internal,
    arguments: toJsonTable(state.arguments),
    bindings: [...state.bindings.values()].map((b) => {
      const { destination, destinationType } = bindingInfo(b);
      const record = { destination, routingKey: b.routingKey, args: toJsonTable(b.args) };
      return destinationType === 'exchange' ? { ...record, destinationType } : record;
    }),
  };
}
