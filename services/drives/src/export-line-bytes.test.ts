// The byte renderer of the export's lines against the string renderer it stands in for (exportedDriveLines, which
// export-part.test.ts holds to the API's representation), over random COPY rows: the same bytes, or nothing written.
import { PageBytes } from '@mileage/runtime/worker';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { writeExportedDrive } from './export-line-bytes';
import { EXPORT_COLUMNS, exportedDriveLines } from './export-lines';
import { generator } from './generator.fixture';
import type { CommentRow } from './rows';

/** A value as COPY's text format prints it (PostgreSQL's CopyAttributeOutText): `\N` for NULL. */
function copyText(value: string | null): string {
  if (value === null) return '\\N';
  return value.replace(
    /[\\\b\f\n\r\t\v]/g,
    (c) => `\\${{ '\\': '\\', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't', '\v': 'v' }[c]}`,
  );
}

/** A JSON value as jsonb prints it: `{"key": value, ...}`, keys shorter first, then by their bytes. */
function jsonbText(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jsonbText).join(', ')}]`;
  const keys = Object.keys(value).sort((a, b) => a.length - b.length || Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return `{${keys.map((k) => `${JSON.stringify(k)}: ${jsonbText((value as Record<string, unknown>)[k])}`).join(', ')}}`;
}

const TEXTS = [
  'Client visit',
  'Ünïcödé 🚗',
  'quote " and \\ back',
  'line\nbreak\ttab\r',
  'ctl \u0001\u001f\u007f',
  '\\N',
  '',
  'a,b',
];
const NUMBERS = [
  '12.50',
  '0.00',
  '-0.50',
  '7',
  '0.000001',
  '0.0000001',
  'NaN',
  '99999999.99',
  '123456789012345',
  '1234567890123456',
  '9007199254740993',
  '100000000000000000000',
  '1000000000000000000000',
  '0.10',
  '-0',
  '010',
];
const PG_TIMES = [
  '2026-11-23 09:12:04.123+00',
  '2026-11-23 09:12:04.1+00',
  '2026-02-28 23:59:59+00',
  '2026-11-23 09:12:04.123456+00',
  '1969-12-31 23:59:59.5+00',
  '2026-11-23 10:12:04+01',
  '2024-02-29 00:00:00+00',
];
const ISO_TIMES = [
  '2026-11-23T08:00:00Z',
  '2026-11-23T08:00:00.5Z',
  '2026-11-23T08:00:00.1234Z',
  '2026-02-30T08:00:00Z',
  '2026-11-23T08:00:00+01:00',
  '1969-07-20T20:17:00Z',
  '2026-11-23T24:00:00Z',
];

function location(g: ReturnType<typeof generator>): string | null {
  if (g.next() < 0.15) return null;
  const stored: Record<string, unknown> = {};
  if (g.next() < 0.9) stored.name = g.maybe(g.pick(TEXTS));
  if (g.next() < 0.8) stored.lat = g.maybe(g.next() < 0.9 ? '52.520008' : 52.52);
  if (g.next() < 0.8) stored.lon = g.maybe('-13.404954');
  if (g.next() < 0.8) stored.time = g.next() < 0.05 ? null : g.pick(ISO_TIMES);
  if (g.next() < 0.1) stored.extra = g.pick(['x', { nested: true }, 7, null, [1]]);
  if (g.next() < 0.8) {
    const address: Record<string, unknown> = {};
    for (const key of ['country', 'state', 'city', 'street', 'postalCode', 'county'])
      if (g.next() < 0.6) address[key] = g.next() < 0.05 ? { deeper: 'x' } : g.maybe(g.pick(TEXTS));
    stored.address = g.next() < 0.05 ? 'not an object' : g.maybe(address);
  }
  return jsonbText(stored);
}

function randomRow(g: ReturnType<typeof generator>): Record<(typeof EXPORT_COLUMNS)[number], string | null> {
  const money = () => (g.next() < 0.4 ? [null, null] : [g.pick(NUMBERS), g.maybe(g.pick(['USD', 'CAD', 'G"B,P']))]);
  const [value, valueCurrency] = money();
  const [toll, tollCurrency] = money();
  const [parking, parkingCurrency] = money();
  return {
    'd.id': g.next() < 0.9 ? String(1 + Math.floor(g.next() * 1e9)) : g.pick(['12345678901234567', '0', '007']),
    'd.user_id': g.pick(['DriverA001', 'Dr"iver,B\\2']),
    'r.status': g.pick(['submitted', 'approved', 'needs "review"']),
    'r.reported_at': g.pick(PG_TIMES),
    'r.modified_at': g.pick(PG_TIMES),
    'd.distance_amount': g.maybe(g.pick(NUMBERS)),
    'd.distance_units': g.next() < 0.9 ? g.pick(['mi', 'km']) : null,
    'd.distance_discounted': g.maybe(g.pick(NUMBERS)),
    'd.value_amount': value!,
    'd.value_currency': valueCurrency!,
    'd.toll_amount': toll!,
    'd.toll_currency': tollCurrency!,
    'd.parking_amount': parking!,
    'd.parking_currency': parkingCurrency!,
    'd.description': g.maybe(g.pick(TEXTS)),
    'd.entry': g.pick(['manual', 'automatic', 'manua']),
    'd.classification': g.maybe(g.pick(['business', 'personal'])),
    'd.purpose': g.maybe(g.pick(TEXTS)),
    'd.start_location': location(g),
    'd.end_location': location(g),
  };
}

const comment = (id: number, text: string): CommentRow => ({
  id: String(id),
  drive_id: '1',
  text,
  user_email: 'reviewer@example.com',
  created_at: { seconds: 1_790_000_000 + id, nanos: 5_000_000 },
});

test("the bytes of every row the byte renderer takes are the string renderer's lines; a row it refuses writes nothing", () => {
  const g = generator(20261129);
  const json = new PageBytes(16);
  const csv = new PageBytes(16);
  let taken = 0;
  const ROWS = 5_000;
  for (let n = 0; n < ROWS; n++) {
    const row = randomRow(g);
    const values = EXPORT_COLUMNS.map((column) => row[column]);
    const comments = g.next() < 0.2 ? [comment(n, g.pick(TEXTS) || 'ok'), comment(n + 1, 'second, "quoted"')] : [];
    // Rows side by side in one buffer, as a page of COPY rows holds them.
    const bytes = Buffer.from(`x\n${values.map(copyText).join('\t')}\ny`);
    const [jsonBefore, csvBefore] = [json.length, csv.length];
    const expected = exportedDriveLines(values, comments);
    if (writeExportedDrive(bytes, 2, bytes.length - 2, comments, json, csv)) {
      taken++;
      const seed = `row ${n}: ${JSON.stringify(values)}`;
      assert.equal(json.take().subarray(jsonBefore).toString(), expected.json, seed);
      assert.equal(csv.take().subarray(csvBefore).toString(), expected.csv, seed);
    } else assert.deepEqual([json.length, csv.length], [jsonBefore, csvBefore]);
  }
  // Only rows that are not of the export's columns are refused; every one of these is.
  assert.equal(taken, ROWS);
});

test("a row that is not of the export's columns is refused, with nothing written", () => {
  const json = new PageBytes(16);
  const csv = new PageBytes(16);
  const columns = EXPORT_COLUMNS.map(() => 'x');
  for (const row of [columns.slice(1), [...columns, 'x'], ['\\N', ...columns.slice(1)]]) {
    const bytes = Buffer.from(row.join('\t'));
    assert.equal(writeExportedDrive(bytes, 0, bytes.length, [], json, csv), false);
    assert.deepEqual([json.length, csv.length], [0, 0]);
  }
});
