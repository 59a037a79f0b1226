/**
 * How the registry keys the destinations of bindings. Routers see destinations as opaque keys: a
 * queue's key is its name, an exchange's is its name behind a lone low surrogate, which no queue
 * name holds (queue names are well-formed Unicode), so a queue and an exchange of the same name
 * never meet.
 */
import type { Binding, BindingInfo, DestinationType } from './types.js';

const EXCHANGE_KEY = String.fromCharCode(0xdc00);

/** The key of a destination, as routers hold it. */
export function destinationKey(name: string, type: DestinationType): string {
  return type === 'exchange' ? EXCHANGE_KEY + name : name;
}

/** The exchange a destination key names, or undefined for a queue's key. */
export function exchangeOfKey(key: string): string | undefined {
  return key.startsWith(EXCHANGE_KEY) ? key.slice(EXCHANGE_KEY.length) : undefined;
}

/** A binding as the registry lists it: the destination's name and type. */
export function bindingInfo(binding: Binding): BindingInfo {
  const exchange = exchangeOfKey(binding.destination);
  return exchange === undefined
    ? { ...binding, destinationType: 'queue' }
    : { ...binding, destination: exchange, destinationType: 'exchange' };
}
