/**
 * The parser and compiler against the reference interpreter: random filters, random messages,
 * and both must agree on every delivery decision.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MqliteError } from '../../src/errors.js';
import { filterValueKey, parseStreamFilter, passesValueGate } from '../../src/filters/index.js';
import { referenceMatches } from './reference-filter.js';

const VALUES = ['a', 'b', 'c', 'd'];

// Coordinates mix whole degrees (to land on edges and vertices) with arbitrary doubles and the
// extremes (poles, antimeridian).
const latArb = fc.oneof(
  fc.integer({ min: -90, max: 90 }),
  fc.double({ min: -90, max: 90, noNaN: true }),
  fc.constantFrom(-90, 90, 89.9, -89.9),
);
const lonArb = fc.oneof(
  fc.integer({ min: -180, max: 180 }),
  fc.double({ min: -180, max: 180, noNaN: true }),
  fc.constantFrom(-180, 180, 179.9, -179.9),
);

const valueListArb = fc
  .array(fc.constantFrom(...VALUES, ' a', 'b ', ''), { maxLength: 3 })
  .map((pieces) => pieces.join(','));
const scalarArb = fc.constantFrom<unknown>('red', 'blue', 5, '5', 5n, true, 'true', 1.5);

const radiusArb = fc.record({
  lat: latArb,
  lon: lonArb,
  radius_km: fc.oneof(
    fc.double({ min: 0.001, max: 5000, noNaN: true }),
    fc.constantFrom(100, 20016),
  ),
});
const bboxArb = fc.tuple(latArb, latArb, lonArb, lonArb).map(([a, b, c, d]) => ({
  min_lat: Math.min(a, b),
  max_lat: Math.max(a, b),
  min_lon: Math.min(c, d),
  max_lon: Math.max(c, d),
}));
const polygonArb = fc
  .array(fc.tuple(latArb, lonArb), { minLength: 3, maxLength: 7 })
  .filter((pts) => new Set(pts.map(String)).size >= 3)
  .map((points) => ({ points }));

const tableArb = fc.record(
  {
    'x-stream-filter': valueListArb,
    color: scalarArb,
    size: scalarArb,
    'geo-within-radius': radiusArb,
    'geo-bbox': bboxArb,
    'geo-polygon': polygonArb,
  },
  { requiredKeys: [] },
);

const { filter: filterArb } = fc.letrec<{ filter: unknown }>((tie) => ({
  filter: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    valueListArb,
    tableArb,
    fc.array(tie('filter'), { maxLength: 3 }),
  ),
}));

const argsArb = fc.record(
  {
    'x-stream-filter': filterArb,
    'x-filter-match-type': fc.constantFrom('all', 'any', 'ANY', 'All'),
    'x-stream-match-unfiltered': fc.boolean(),
  },
  { requiredKeys: ['x-stream-filter'] },
);

const messageArb = fc.option(
  fc.record(
    {
      'x-stream-filter-value': fc.oneof(
        valueListArb,
        fc.constantFrom<unknown>(5, null, true, new Date(5), ['a']),
      ),
      color: scalarArb,
      size: fc.oneof(scalarArb, fc.constantFrom<unknown>(null, new Date(5), [5])),
      'x-geo-lat': fc.oneof(latArb, fc.constantFrom<unknown>('45', 91, -90.5, Number.NaN, null)),
      'x-geo-lon': fc.oneof(
        lonArb,
        fc.constantFrom<unknown>('9', 181, -180.5, Number.POSITIVE_INFINITY),
      ),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);

describe('compiled filters agree with the reference interpreter', () => {
  it('on random filters and messages', () => {
    fc.assert(
      fc.property(
        argsArb,
        fc.array(messageArb, { minLength: 1, maxLength: 8 }),
        (args, messages) => {
          // A filter that filters nothing is no filter: everything passes, as in the reference.
          const compiled = parseStreamFilter(args);
          for (const headers of messages) {
            const actual = compiled ? compiled.matches(headers) : true;
            const expected = referenceMatches(args, headers);
            expect(actual).toBe(expected);
            // A replay passes over what the value gate rules out: it must never hold a match.
            const gate = compiled?.valueGate;
            const key = filterValueKey(headers?.['x-stream-filter-value']);
            if (gate && !passesValueGate(gate, key)) expect(expected).toBe(false);
            // An exact gate is the whole filter: a replay delivers what it lets through unread.
            if (gate?.exact) expect(passesValueGate(gate, key)).toBe(expected);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('on messages placed near the filter geometry', () => {
    // Messages around a circle or box so that geo filters match about half the time.
    const nearArb = fc
      .tuple(
        radiusArb,
        fc.double({ min: -3, max: 3, noNaN: true }),
        fc.double({ min: -3, max: 3, noNaN: true }),
      )
      .map(([radius, dLat, dLon]) => ({
        args: { 'x-stream-filter': { 'geo-within-radius': radius } },
        headers: {
          'x-geo-lat': Math.max(-90, Math.min(90, radius.lat + dLat)),
          'x-geo-lon': ((radius.lon + dLon + 540) % 360) - 180,
        },
      }));
    fc.assert(
      fc.property(nearArb, ({ args, headers }) => {
        expect(parseStreamFilter(args)!.matches(headers)).toBe(referenceMatches(args, headers));
      }),
      { numRuns: 3000 },
    );
  });

  it('reject arbitrary junk only with a 406, never a crash', () => {
    fc.assert(
      fc.property(
        fc.record({
          'x-stream-filter': fc.oneof(fc.anything(), filterArb),
          'x-filter-match-type': fc.oneof(fc.anything(), fc.constant('any')),
          'x-stream-match-unfiltered': fc.oneof(fc.anything(), fc.boolean()),
        }),
        fc.anything(),
        (args, headers) => {
          let compiled: ReturnType<typeof parseStreamFilter>;
          try {
            compiled = parseStreamFilter(args);
          } catch (e) {
            expect(e).toBeInstanceOf(MqliteError);
            expect((e as MqliteError).replyCode).toBe(406);
            return;
          }
          if (compiled && headers !== null && typeof headers === 'object') {
            expect(typeof compiled.matches(headers as Record<string, unknown>)).toBe('boolean');
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});
