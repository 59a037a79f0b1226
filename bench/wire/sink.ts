/**
 * The limit of a client over loopback: an AMQP server that does the least a client needs. It
 * cuts the stream into frames and decodes each method with mqlite's own wire code
 * (src/server/wire), answers the handshake and the methods a benchmark client sends, counts
 * publishes and drops their content. A queue's message count is the number of publishes since
 * the last purge; in confirm mode, each batch of frames read is acked with one `multiple`. A
 * consumer gets that many 100-byte deliveries, encoded as mqlite's server encodes them, within
 * its prefetch: no queue, no storage.
 */
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { EMPTY_PROPERTIES } from '../../src/message/normalize.js';
import { PROTOCOL_HEADER } from '../../src/server/handshake.js';
import { Reader, Writer } from '../../src/server/wire/bytes.js';
import { PropertiesCache, shortstrBytes, writeDelivery } from '../../src/server/wire/delivery.js';
import { FrameParser } from '../../src/server/wire/frames.js';
import { FRAME_METHOD, readArgs, writeMethod } from '../../src/server/wire/methods.js';
import { methodById } from '../../src/server/wire/spec.js';

const BODY = Buffer.alloc(100, 'x');

export function listenSink(): Promise<Server> {
  let published = 0;
  const server = createServer((socket) => serve(socket));
  function serve(socket: Socket): void {
    socket.setNoDelay(true);
    const parser = new FrameParser(131072);
    const out = new Writer(64 * 1024);
    const properties = new PropertiesCache();
    /** Per channel in confirm mode: publishes numbered so far, and acked so far. */
    const confirming = new Map<number, { seq: number; acked: number }>();
    let header = true;
    let prefetch = 0;
    /** The consumer of the connection (one at most), its deliveries sent and acked. */
    let consumer:
      | { channel: number; tag: Uint8Array; exchange: Uint8Array; queue: Uint8Array }
      | undefined;
    let delivered = 0;
    let acked = 0;
    const deliver = () => {
      if (!consumer) return;
      const { channel, tag, exchange, queue } = consumer;
      while (published > 0 && (prefetch === 0 || delivered - acked < prefetch)) {
        published--;
        const deliveryTag = ++delivered;
        writeDelivery(
          out,
          channel,
          tag,
          deliveryTag,
          false,
          exchange,
          queue,
          EMPTY_PROPERTIES,
          BODY,
          131072,
          properties,
        );
      }
    };
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      if (header) {
        // Clients send the 8-byte protocol header in one write.
        header = false;
        writeMethod(out, 0, 'connection.start', {
          versionMajor: 0,
          versionMinor: 9,
          serverProperties: { capabilities: { publisher_confirms: true } },
          mechanisms: 'PLAIN AMQPLAIN',
          locales: 'en_US',
        });
        chunk = chunk.subarray(PROTOCOL_HEADER.length);
      }
      parser.push(chunk, (type, channel, bytes, start, end) => {
        if (type === FRAME_METHOD) onMethod(channel, bytes, start, end);
        return true;
      });
      deliver();
      for (const [channel, confirms] of confirming) {
        if (confirms.seq === confirms.acked) continue;
        confirms.acked = confirms.seq;
        writeMethod(out, channel, 'basic.ack', { deliveryTag: confirms.seq, multiple: true });
      }
      if (out.pos > 0) {
        socket.write(out.take());
        out.pos = 0;
      }
    });
    function onMethod(channel: number, bytes: Buffer, start: number, end: number): void {
      const r = new Reader(bytes, start, end);
      const method = readArgs(r, methodById(r.u16(), r.u16())!);
      switch (method.name) {
        case 'basic.publish': {
          published++;
          const confirms = confirming.get(channel);
          if (confirms) confirms.seq++;
          return;
        }
        case 'connection.start-ok':
          writeMethod(out, 0, 'connection.tune', {
            channelMax: 2047,
            frameMax: 131072,
            heartbeat: 0,
          });
          return;
        case 'connection.open':
          writeMethod(out, 0, 'connection.open-ok', { knownHosts: '' });
          return;
        case 'connection.close':
          writeMethod(out, 0, 'connection.close-ok', {});
          socket.end(out.take());
          out.pos = 0;
          return;
        case 'channel.open':
          writeMethod(out, channel, 'channel.open-ok', { channelId: '' });
          return;
        case 'channel.close':
          writeMethod(out, channel, 'channel.close-ok', {});
          return;
        case 'confirm.select':
          confirming.set(channel, { seq: 0, acked: 0 });
          writeMethod(out, channel, 'confirm.select-ok', {});
          return;
        case 'queue.declare':
          writeMethod(out, channel, 'queue.declare-ok', {
            queue: method.args.queue,
            messageCount: published,
            consumerCount: 0,
          });
          return;
        case 'queue.purge':
          writeMethod(out, channel, 'queue.purge-ok', { messageCount: published });
          published = 0;
          return;
        case 'basic.qos':
          prefetch = method.args.prefetchCount;
          writeMethod(out, channel, 'basic.qos-ok', {});
          return;
        case 'basic.consume': {
          const tag = method.args.consumerTag || `sink-${channel}`;
          consumer = {
            channel,
            tag: shortstrBytes(tag),
            exchange: shortstrBytes(''),
            queue: shortstrBytes(method.args.queue),
          };
          delivered = acked = 0;
          writeMethod(out, channel, 'basic.consume-ok', { consumerTag: tag });
          return;
        }
        case 'basic.ack':
          acked = method.args.multiple ? method.args.deliveryTag : acked + 1;
          return;
        case 'basic.cancel':
          consumer = undefined;
          writeMethod(out, channel, 'basic.cancel-ok', { consumerTag: method.args.consumerTag });
          return;
        case 'queue.delete':
          writeMethod(out, channel, 'queue.delete-ok', { messageCount: published });
          return;
        default:
          return;
      }
    }
  }
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

export function portOf(server: Server): number {
  return (server.address() as AddressInfo).port;
}
