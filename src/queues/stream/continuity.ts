/**
 * Checks on open that a stream's offsets are whole: a gap between retained segments (a segment
 * file lost) is reported, and a log that lost its tail, so that its next offset fell below an
 * offset a consumer already stored, is moved past it, so that no offset is handed out twice.
 * Each gap is reported once: the gaps known are kept in the stream's metadata.
 */
import { DataLossError } from '../../errors.js';
import type { JsonValue, Log, MetaStore } from '../../storage/types.js';
import { OffsetStore } from './tracking.js';

const GAPS_KEY = 'stream.gaps';

/** A run of offsets known to be lost: `[first, end)`. */
type Gap = readonly [number, number];

export function checkContinuity(
  name: string,
  log: Log<unknown>,
  meta: MetaStore,
  report: (loss: DataLossError) => void,
): void {
  const stored = meta.get(GAPS_KEY);
  const known: Gap[] = Array.isArray(stored)
    ? (stored as Gap[]).filter((gap) => gap[1] > log.firstOffset)
    : [];
  const isKnown = (first: number) => known.some((gap) => gap[0] === first);
  const found = (gap: Gap, loss: DataLossError) => {
    if (isKnown(gap[0])) return;
    known.push(gap);
    report(loss);
  };
  const segments = log.segments();
  for (let i = 1; i < segments.length; i++) {
    const first = segments[i - 1]!.lastOffset + 1;
    const end = segments[i]!.firstOffset;
    if (end > first) {
      found(
        [first, end],
        new DataLossError(
          'gap',
          `stream '${name}' is missing offsets ${first} to ${end - 1}: a segment of it was lost`,
          { records: end - first },
        ),
      );
    }
  }
  const next = log.nextOffset;
  const resume = new OffsetStore(meta, log.nextOffset).highest();
  if (resume !== undefined && resume > next && log.advanceTo) {
    found(
      [next, resume],
      new DataLossError(
        'reset',
        `stream '${name}' ends at offset ${next - 1}, below offset ${resume} a consumer stored: the messages up to it were lost, and the stream continues from ${resume}`,
        { records: resume - next },
      ),
    );
    log.advanceTo(resume);
  }
  if (known.length > 0 || stored !== undefined) {
    meta.set(GAPS_KEY, known.length > 0 ? (known as unknown as JsonValue) : []);
  }
}
