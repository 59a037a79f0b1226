/**
 * The binary record format of stored messages, used by persistent storage adapters: the layout,
 * and the property bits and value tags that `record-encoder.ts` writes and `record-decoder.ts`
 * reads.
 *
 * ```
 * u16 properties present (bits P_*) | str exchange | str routing key
 * property values, in bit order: strings as str, deliveryMode/priority as u8,
 *   timestamp as f64 ms (format 3: as i64 seconds when bit 13 is set), headers as a table
 * body: all remaining bytes
 *
 * str    = varint byte length | UTF-8
 * table  = varint entries | (str key | value)*
 * value  = u8 tag | payload:  's' str, 'i' i32, 'd' f64, 'l' i64, 'n' bigint as decimal str,
 *          't' true, 'f' false, 'v' null, 'u' undefined, 'D' Date as f64 ms,
 *          'x' varint length | bytes, 'A' varint items | value*, 'F' table,
 *          'w' str wire type | value (format 2 only), 'T' timestamp as i64 seconds (format 3)
 * ```
 *
 * Numbers keep their kind: integers that fit 32 bits travel as `i`, everything else (fractions,
 * -0, large integers) as `d`, so a header reads back exactly as it was published.
 *
 * Format 2 is format 1 plus the AMQP wire type of header numbers published over AMQP with a tag
 * their kind does not imply (a byte, a short, a float: see wire-types.ts): such a value is
 * prefixed with `w` and the record sets bit 15 of the properties word. Records without one, the
 * usual case, are written exactly as format 1 was. Format 1 records are already on users' disks,
 * pinned by test/storage/fixtures/codec-v1.bin: a change must keep reading them. An unknown
 * property bit or value tag is refused (a `RangeError`, reported by the log as corruption), never
 * skipped; so is a `w` value in a format 1 record.
 *
 * Format 3 is format 2 plus timestamps beyond a `Date` (AMQP's are any 64-bit count of seconds,
 * see timestamp.ts): a timestamp property that is one is written as an i64 of seconds and the
 * record sets bit 13 of the properties word; a header value that is one is tagged `T`, an i64 of
 * seconds. Every other record is written as before, a `Date` as f64 ms.
 */

/** Bits of the properties-present word, in the order the values follow it. */
export const P_CONTENT_TYPE = 1 << 0;
export const P_CONTENT_ENCODING = 1 << 1;
export const P_HEADERS = 1 << 2;
export const P_DELIVERY_MODE = 1 << 3;
export const P_PRIORITY = 1 << 4;
export const P_CORRELATION_ID = 1 << 5;
export const P_REPLY_TO = 1 << 6;
export const P_EXPIRATION = 1 << 7;
export const P_MESSAGE_ID = 1 << 8;
export const P_TIMESTAMP = 1 << 9;
export const P_TYPE = 1 << 10;
export const P_USER_ID = 1 << 11;
export const P_APP_ID = 1 << 12;
export const P_ALL = (1 << 13) - 1;
/** Format 3: the timestamp property is beyond a `Date` (see timestamp.ts), an i64 of seconds. */
export const P_TIMESTAMP_SECONDS = 1 << 13;
/** Format 2: the headers hold `w` values (a value's AMQP wire type, see wire-types.ts). */
export const P_WIRE_TYPES = 1 << 15;

export const T_STRING = 0x73; // s
export const T_INT = 0x69; // i
export const T_DOUBLE = 0x64; // d
export const T_LONG = 0x6c; // l
export const T_BIGINT = 0x6e; // n
export const T_TRUE = 0x74; // t
export const T_FALSE = 0x66; // f
export const T_NULL = 0x76; // v
export const T_UNDEFINED = 0x75; // u
export const T_DATE = 0x44; // D
export const T_BYTES = 0x78; // x
export const T_ARRAY = 0x41; // A
export const T_TABLE = 0x46; // F
export const T_WIRE = 0x77; // w, format 2
export const T_SECONDS = 0x54; // T, format 3
