/**
 * Method frames' payloads, encoded and decoded from the specification table, and the frames the
 * server writes: methods, content (header and body frames cut to frame-max) and heartbeats.
 */
import type { FieldTable, MessageProperties } from '../../message/types.js';
import { type Reader, Writer } from './bytes.js';
import { readTable, writeTable } from './field-table.js';
import { writeContentHeader } from './properties.js';
import type { ArgsOf, ArgType, Method, MethodDef, MethodName } from './spec.js';
import { methodByName } from './spec.js';

export const FRAME_METHOD = 1;
export const FRAME_HEADER = 2;
export const FRAME_BODY = 3;
export const FRAME_HEARTBEAT = 8;
export const FRAME_END = 0xce;
/** Bytes of a frame besides its payload: type, channel, size, end marker. */
export const FRAME_OVERHEAD = 8;

const argLists = new Map<MethodDef, readonly (readonly [string, ArgType])[]>();

/** A method's arguments in wire order, listed once: every frame of it reads the same list. */
function argList(def: MethodDef): readonly (readonly [string, ArgType])[] {
  let list = argLists.get(def);
  if (!list) argLists.set(def, (list = Object.entries(def.args) as [string, ArgType][]));
  return list;
}

/**
 * Whether the method frame payload of `size` bytes at `at` is a basic.ack (class 60, method 80: a delivery tag and the
 * `multiple` bit, nothing else set), the method a consumer sends for every message: it is read
 * in place rather than through the generic decoder.
 */
export function isBasicAck(frame: Uint8Array, at: number, size: number): boolean {
  return (
    size === 13 &&
    frame[at] === 0 &&
    frame[at + 1] === 60 &&
    frame[at + 2] === 0 &&
    frame[at + 3] === 80 &&
    frame[at + 12]! <= 1
  );
}

/** Decodes a method's arguments (the reader is past the class and method ids). */
export function readArgs(r: Reader, def: MethodDef): Method {
  const args: Record<string, unknown> = {};
  let bits = 0;
  let bit = 8;
  for (const [name, type] of argList(def)) {
    if (type === 'bit') {
      if (bit === 8) {
        bits = r.u8();
        bit = 0;
      }
      args[name] = (bits & (1 << bit++)) !== 0;
      continue;
    }
    bit = 8;
    args[name] = readArg(r, type);
  }
  return { name: def.name, def, args } as Method;
}

function readArg(r: Reader, type: Exclude<ArgType, 'bit'>): unknown {
  switch (type) {
    case 'octet':
      return r.u8();
    case 'short':
      return r.u16();
    case 'long':
      return r.u32();
    case 'longlong':
      return r.u64Number();
    case 'shortstr':
      return r.shortstr();
    case 'longstr':
      return r.longstr();
    case 'table':
      return readTable(r);
    case 'timestamp':
      return r.timestamp();
  }
}

/** The arguments of a method to send; strings may stand for long strings. */
export type OutArgs<N extends MethodName> = {
  [K in keyof ArgsOf<N>]: ArgsOf<N>[K] extends Uint8Array ? Uint8Array | string : ArgsOf<N>[K];
};

function writeArgs(w: Writer, def: MethodDef, args: Record<string, unknown>): void {
  w.u16(def.classId);
  w.u16(def.methodId);
  let bitsAt = -1;
  let bit = 8;
  for (const [name, type] of argList(def)) {
    const value = args[name];
    if (type === 'bit') {
      if (bit === 8) {
        bitsAt = w.pos;
        w.u8(0);
        bit = 0;
      }
      if (value) w.buf[bitsAt] = w.buf[bitsAt]! | (1 << bit);
      bit++;
      continue;
    }
    bit = 8;
    switch (type) {
      case 'octet':
        w.u8(value as number);
        break;
      case 'short':
        w.u16(value as number);
        break;
      case 'long':
        w.u32(value as number);
        break;
      case 'longlong':
        w.u64Number(value as number);
        break;
      case 'shortstr':
        w.shortstr(value as string);
        break;
      case 'longstr':
        w.longstr(value as string | Uint8Array);
        break;
      case 'table':
        writeTable(w, value as FieldTable);
        break;
      case 'timestamp':
        w.timestamp(value as Date);
        break;
    }
  }
}

/** Starts a frame: type, channel and a size patched by `endFrame`. */
function startFrame(w: Writer, type: number, channel: number): number {
  w.ensure(7);
  w.u8(type);
  w.u16(channel);
  w.u32(0);
  return w.pos;
}

function endFrame(w: Writer, start: number): void {
  w.buf.writeUInt32BE(w.pos - start, start - 4);
  w.u8(FRAME_END);
}

/** Appends a method frame. */
export function writeMethod<N extends MethodName>(
  w: Writer,
  channel: number,
  name: N,
  args: OutArgs<N>,
): void {
  const start = startFrame(w, FRAME_METHOD, channel);
  writeArgs(w, methodByName(name), args as Record<string, unknown>);
  endFrame(w, start);
}

/** Appends a content header frame and the body frames, each at most `frameMax` bytes. */
export function writeContent(
  w: Writer,
  channel: number,
  properties: Readonly<MessageProperties>,
  body: Uint8Array,
  frameMax: number,
): void {
  let start = startFrame(w, FRAME_HEADER, channel);
  writeContentHeader(w, body.length, properties);
  endFrame(w, start);
  const chunk = frameMax - FRAME_OVERHEAD;
  for (let at = 0; at < body.length; at += chunk) {
    start = startFrame(w, FRAME_BODY, channel);
    w.bytes(body.subarray(at, Math.min(body.length, at + chunk)));
    endFrame(w, start);
  }
}

/** Appends a heartbeat frame. */
export function writeHeartbeat(w: Writer): void {
  endFrame(w, startFrame(w, FRAME_HEARTBEAT, 0));
}

/** One method frame's bytes, for tests and the handshake. */
export function methodFrame<N extends MethodName>(
  channel: number,
  name: N,
  args: OutArgs<N>,
): Buffer {
  const w = new Writer(256);
  writeMethod(w, channel, name, args);
  return w.take();
}
