/**
 * The stored-message codec, which every persistent queue runs once per publish (encode) and once
 * per replay or delivery from disk (decode): a 100-byte body without properties, and the same
 * body with a few properties and headers. Decoding uses `decodeFrom` on a framed buffer, as the
 * fs adapter does.
 *
 * Standalone: `npx tsx bench/message-codec.ts`.
 */
import { messageCodec } from '../src/message/codec.js';
import type { StoredMessage } from '../src/message/types.js';
import { bestOf, isMain, printResults, scaled } from './harness.js';
import type { BenchResult } from './types.js';

const OPS = scaled(1_000_000);
const body = new Uint8Array(100).fill(0x61);

const messages: Array<[string, StoredMessage]> = [
  ['no properties', { exchange: '', routingKey: 'jobs', properties: {}, body }],
  [
    '3 properties, 3 headers',
    {
      exchange: 'amq.topic',
      routingKey: 'orders.eu.created',
      properties: {
        contentType: 'application/json',
        deliveryMode: 2,
        messageId: 'msg-000123',
        headers: { region: 'eu', attempt: 3, priority: 'high' },
      },
      body,
    },
  ],
];

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const [label, message] of messages) {
    const encoded = messageCodec.encode(message);
    const framed = new Uint8Array(24 + encoded.length);
    framed.set(encoded, 24);
    let sink = 0;
    const encode = await bestOf(OPS, () => {
      for (let i = 0; i < OPS; i++) sink += messageCodec.encode(message).length;
    });
    const decode = await bestOf(OPS, () => {
      for (let i = 0; i < OPS; i++) {
        sink += messageCodec.decodeFrom!(framed, 24, encoded.length).body.length;
      }
    });
    if (sink === 0) throw new Error('nothing measured');
    const targeted = label === 'no properties';
    results.push(
      {
        name: `encode, ${label}`,
        opsPerSec: encode,
        note: `${encoded.length} bytes`,
        ...(targeted ? { targets: [{ target: '≥ 3 M/s' }] } : {}),
      },
      {
        name: `decode, ${label}`,
        opsPerSec: decode,
        ...(targeted ? { targets: [{ target: '≥ 5 M/s' }] } : {}),
      },
    );
  }
  return results;
}

if (isMain(import.meta.url)) printResults(await run());
