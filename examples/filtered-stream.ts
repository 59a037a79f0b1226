/**
 * A filtered stream: publishers tag sightings with a kind (`x-stream-filter-value`) and a place
 * (`x-geo-lat`, `x-geo-lon`); each consumer says in its subscribe arguments which ones it wants,
 * by kind, by header, or by region (radius, box or polygon), and receives only those.
 *
 * Run: `npx tsx examples/filtered-stream.ts`
 */
import type { FieldTable } from 'mqlite';
import { StreamQueue } from 'mqlite';

const stream = await StreamQueue.open({ name: 'sightings' });

const sightings = [
  { what: 'moose', where: 'Stockholm', lat: 59.33, lon: 18.07, country: 'se' },
  { what: 'lynx', where: 'Uppsala', lat: 59.86, lon: 17.64, country: 'se' },
  { what: 'fox', where: 'Paris', lat: 48.86, lon: 2.35, country: 'fr' },
  { what: 'heron', where: 'Amsterdam', lat: 52.37, lon: 4.9, country: 'nl' },
  { what: 'fox', where: 'Brussels', lat: 50.85, lon: 4.35, country: 'be' },
  { what: 'wolf', where: 'Rome', lat: 41.9, lon: 12.5, country: 'it' },
];

/** Starts a consumer from the beginning of the stream that prints what it receives. */
async function watch(name: string, filters: FieldTable): Promise<void> {
  const received: string[] = [];
  await stream.subscribe({ args: { 'x-stream-offset': 'first', ...filters } }, (message) => {
    const { what, where } = message.json<{ what: string; where: string }>();
    received.push(`${what} in ${where} (offset ${message.offset})`);
  });
  await new Promise((resolve) => setImmediate(resolve));
  console.log(`${name}:\n  ${received.join('\n  ') || '(nothing)'}`);
}

for (const s of sightings) {
  await stream.publish(s, {
    headers: {
      'x-stream-filter-value': s.what,
      'x-geo-lat': s.lat,
      'x-geo-lon': s.lon,
      country: s.country,
    },
  });
}
// A message without coordinates matches no geo filter; it stops no consumer.
await stream.publish(
  { what: 'fox', where: 'somewhere' },
  { headers: { 'x-stream-filter-value': 'fox' } },
);

await watch('within 100 km of Stockholm', {
  'x-stream-filter': { 'geo-within-radius': { lat: 59.33, lon: 18.07, radius_km: 100 } },
});
await watch('foxes (by filter value)', { 'x-stream-filter': 'fox' });
await watch('foxes inside a box around France', {
  'x-stream-filter': {
    'x-stream-filter': 'fox',
    'geo-bbox': { min_lat: 42, max_lat: 51, min_lon: -5, max_lon: 8 },
  },
});
await watch('inside a polygon around the Low Countries', {
  'x-stream-filter': {
    'geo-polygon': {
      points: [
        [49.5, 2.5],
        [53.6, 4.5],
        [53.3, 7.2],
        [49.5, 6.4],
      ],
    },
  },
});
await watch("wolves, or anything with header country = 'it' or 'nl'", {
  'x-stream-filter': ['wolf', { country: 'it' }, { country: 'nl' }],
  'x-filter-match-type': 'any',
});

// Bad filter arguments fail the subscribe call with 406 naming the key.
await stream
  .subscribe({ args: { 'x-stream-filter': { 'geo-within-radius': { lat: 59, lon: 18 } } } })
  .catch((error: Error) => console.log(`refused: ${error.message}`));

await stream.close();
