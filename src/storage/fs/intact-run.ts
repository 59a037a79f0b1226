/**
 * The search, in the tail segment, for an intact run after a bad one (see recovery.ts): what
 * tells a torn last write (nothing intact after it, cut) from damage (intact runs after it, kept
 * and reported). A garbled length can state any end, so every position after the bad run is
 * tried, in one pass whose work grows with the bytes searched, not with their square:
 *
 * - A run is only tried where its frames are as a writer lays them out: a layout 2 frame has a
 *   zero header checksum and a payload of at least the chunk checksum, and the frames of a chunk
 *   after its first start within {@link SPARSE_EVERY} bytes of it (a frame past that would
 *   have started a span of the sparse index, and so a chunk). So each start walks a bounded
 *   number of frames.
 * - Runs tried from many starts often end in the same frame (a large one): its checksum is taken
 *   once, and each start costs its bytes before that frame and a checksum shift (checksum.ts).
 * - Whatever is left of the work (layout 1 frames whose stated lengths keep fitting) is bounded:
 *   past {@link WORK_PER_BYTE} steps per byte searched, the search gives up, and the bad run is
 *   taken as damage. A tail that cannot be told torn is never cut.
 */
import { crc32Range, crc32Shift } from './checksum.js';
import {
  CHUNK_CHECKSUM,
  CHUNK_RESIDUE,
  checkRun,
  FRAME_CHECKSUM_LAYOUT,
  FRAME_HEADER,
  isChunkEnd,
  u32,
} from './frame.js';
import { SPARSE_EVERY } from './segment.js';

/** Steps (frames walked, bytes checksummed) allowed per byte searched, and in any case. */
const WORK_PER_BYTE = 64;
const WORK_FLOOR = 1 << 22;

/** Result of {@link intactRunAfter} when no run is intact. */
export const NONE_INTACT = -1;
/** Result of {@link intactRunAfter} when the search gave up (see the header). */
export const SEARCH_GAVE_UP = -2;

/** Counts the steps of a search, for its callers and tests. */
export interface SearchWork {
  steps: number;
}

/**
 * Position in `rest` (the `n` bytes read from a bad run on) of the first intact run after the
 * bad one, {@link NONE_INTACT} or {@link SEARCH_GAVE_UP}.
 */
export function intactRunAfter(
  layout: number,
  rest: Uint8Array,
  n: number,
  work: SearchWork = { steps: 0 },
): number {
  const budget = work.steps + WORK_FLOOR + WORK_PER_BYTE * n;
  if (layout === FRAME_CHECKSUM_LAYOUT) {
    for (let at = 1; at + FRAME_HEADER <= n; at++) {
      const length = u32(rest, at);
      work.steps++;
      if (length > n - at - FRAME_HEADER) continue;
      work.steps += FRAME_HEADER + length;
      if (checkRun(layout, rest, at, n, n) > 0) return at;
      if (work.steps > budget) return SEARCH_GAVE_UP;
    }
    return NONE_INTACT;
  }
  /** CRC-32 from 0 of the frame at each position that ended a run tried. */
  const lastFrames = new Map<number, number>();
  for (let at = 1; at + FRAME_HEADER <= n; at++) {
    const last = chunkEnd(rest, at, n, work);
    if (last < 0) continue;
    const end = last + FRAME_HEADER + u32(rest, last);
    let lastCrc = lastFrames.get(last);
    if (lastCrc === undefined) {
      lastCrc = crc32Range(rest, last, end);
      lastFrames.set(last, lastCrc);
      work.steps += end - last;
    }
    work.steps += last - at + 32;
    const head = crc32Range(rest, at, last, CHUNK_RESIDUE);
    if ((crc32Shift(head, end - last) ^ lastCrc) >>> 0 === CHUNK_RESIDUE) return at;
    if (work.steps > budget) return SEARCH_GAVE_UP;
  }
  return NONE_INTACT;
}

/**
 * The last frame of the layout 2 chunk that the frames at `rest[at]` state, laid out as a
 * writer lays chunks out; -1 when they state none within `n` bytes.
 */
function chunkEnd(rest: Uint8Array, at: number, n: number, work: SearchWork): number {
  for (let frame = at; ; ) {
    work.steps++;
    const length = u32(rest, frame);
    if (length < CHUNK_CHECKSUM || length > n - frame - FRAME_HEADER) return -1;
    if (u32(rest, frame + 4) !== 0) return -1;
    if (isChunkEnd(rest, frame)) return frame;
    frame += FRAME_HEADER + length;
    if (frame - at >= SPARSE_EVERY || n - frame < FRAME_HEADER) return -1;
  }
}
