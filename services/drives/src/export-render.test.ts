// The WebAssembly renderer of the export's lines (export-render.ts) against the string renderer (exportedDriveLines,
// which export-part.test.ts holds to the API's representation), over random COPY rows laid side by side in pages as
// PostgreSQL sends them: the same bytes, whether the row was rendered in WebAssembly or refused and rendered by the
// string renderer in its place.
import { copyTextFields, PageBytes } from '@mileage/runtime/worker';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExportRenderer, type PageComments } from './export-render';
import {
  COMMENT_DRIVE,
  commentOfFields,
  EXPORT_COLUMNS,
  EXPORT_COMMENT_COLUMNS,
  exportedDriveLines,
} from './export-lines';
import { generator } from './generator.fixture';

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

/**
 * The values a row draws from: `common`, the forms the WebAssembly renderer takes (those the API stores), and `odd`,
 * those it refuses (numbers JavaScript prints with an exponent or rounds, times in other zones or with microseconds,
 * jsonb it does not scan), which the string renderer renders in their place.
 */
const FORMS = {
  texts: {
    common: [
      'Client visit',
      'Ünïcödé 🚗',
      'quote " and \\ back',
      'line\nbreak\ttab\r',
      'ctl \u0001\u001f\u007f \b\f\v',
      '\\N',
      '',
      'a,b',
      'carriage\rreturn',
    ],
    odd: [] as string[],
  },
  names: {
    common: ['Client visit', 'Ünïcödé 🚗', '', 'a,b', 'Depot, North'],
    odd: ['quote " and \\ back', 'line\nbreak'],
  },
  numbers: {
    common: ['12.50', '0.00', '-0.50', '7', '0.000001', '99999999.99', '123456789012345', '0.10', '-0'],
    odd: ['0.0000001', 'NaN', '1234567890123456', '9007199254740993', '100000000000000000000', '1e21', '010'],
  },
  ids: { common: ['1', '42', '999999999'], odd: ['12345678901234567', '0', '007'] },
  pgTimes: {
    common: [
      '2026-11-23 09:12:04.123+00',
      '2026-11-23 09:12:04.1+00',
      '2026-02-28 23:59:59+00',
      '2024-02-29 00:00:00+00',
    ],
    odd: ['2026-11-23 09:12:04.123456+00', '1969-12-31 23:59:59.5+00', '2026-11-23 10:12:04+01'],
  },
  isoTimes: {
    common: ['2026-11-23T08:00:00Z', '2026-11-23T08:00:00.5Z', '2026-11-23T08:00:00.12Z'],
    odd: [
      '2026-11-23T08:00:00.1234Z',
      '2026-02-30T08:00:00Z',
      '2026-11-23T08:00:00+01:00',
      '1969-07-20T20:17:00Z',
      '2026-11-23T24:00:00Z',
    ],
  },
};
/** A row's values: of the common forms only (0), or each of the odd forms at this share. */
type OddShare = number;
const COMMON: OddShare = 0;
const ANY: OddShare = 0.04;
const draw = (g: ReturnType<typeof generator>, odd: OddShare, values: { common: string[]; odd: string[] }) =>
  values.odd.length && g.next() < odd ? g.pick(values.odd) : g.pick(values.common);
const TEXTS = FORMS.texts.common;

function location(g: ReturnType<typeof generator>, forms: OddShare): string | null {
  if (g.next() < 0.15) return null;
  const odd = forms > 0;
  const stored: Record<string, unknown> = {};
  if (g.next() < 0.9) stored.name = g.maybe(draw(g, forms, FORMS.names));
  if (g.next() < 0.8) stored.lat = g.maybe(!odd || g.next() < 0.9 ? '52.520008' : 52.52);
  if (g.next() < 0.8) stored.lon = g.maybe('-13.404954');
  if (g.next() < 0.8) stored.time = odd && g.next() < 0.05 ? null : draw(g, forms, FORMS.isoTimes);
  if (odd && g.next() < 0.1) stored.extra = g.pick(['x', { nested: true }, 7, null, [1]]);
  if (g.next() < 0.8) {
    const address: Record<string, unknown> = {};
    for (const key of ['country', 'state', 'city', 'street', 'postalCode', 'county'])
      if (g.next() < 0.6)
        address[key] = odd && g.next() < 0.05 ? { deeper: 'x' } : g.maybe(draw(g, forms, FORMS.names));
    stored.address = odd && g.next() < 0.05 ? 'not an object' : g.maybe(address);
  }
  return jsonbText(stored);
}

/** A random row of the export's columns, its values of `forms`. */
function randomRow(g: ReturnType<typeof generator>, forms: OddShare): (string | null)[] {
  const money = () =>
    g.next() < 0.4 ? [null, null] : [draw(g, forms, FORMS.numbers), g.maybe(g.pick(['USD', 'CAD', 'G"B,P']))];
  const [value, valueCurrency] = money();
  const [toll, tollCurrency] = money();
  const [parking, parkingCurrency] = money();
  const row: Record<(typeof EXPORT_COLUMNS)[number], string | null> = {
    'd.id': g.next() < 0.9 ? String(1 + Math.floor(g.next() * 1e9)) : draw(g, forms, FORMS.ids),
    'd.user_id': g.pick(['DriverA001', 'Dr"iver,B\\2']),
    'r.status': g.pick(['submitted', 'approved', 'needs "review"']),
    'r.reported_at': draw(g, forms, FORMS.pgTimes),
    'r.modified_at': draw(g, forms, FORMS.pgTimes),
    'd.distance_amount': g.maybe(draw(g, forms, FORMS.numbers)),
    'd.distance_units': g.next() < 0.9 ? g.pick(['mi', 'km']) : null,
    'd.distance_discounted': g.maybe(draw(g, forms, FORMS.numbers)),
    'd.value_amount': value!,
    'd.value_currency': valueCurrency!,
    'd.toll_amount': toll!,
    'd.toll_currency': tollCurrency!,
    'd.parking_amount': parking!,
    'd.parking_currency': parkingCurrency!,
    'd.description': g.maybe(draw(g, forms, FORMS.texts)),
    'd.entry': g.pick(['manual', 'automatic', 'manua']),
    'd.classification': g.maybe(g.pick(['business', 'personal'])),
    'd.purpose': g.maybe(draw(g, forms, FORMS.texts)),
    'd.start_location': location(g, forms),
    'd.end_location': location(g, forms),
  };
  return EXPORT_COLUMNS.map((column) => row[column]);
}

/** A review comment of drive `drive` (a page's position) as its COPY row's values (EXPORT_COMMENT_COLUMNS). */
function comment(drive: number, id: string, text: string, created = '2026-09-21 10:13:25.005+00'): (string | null)[] {
  const row: Record<(typeof EXPORT_COMMENT_COLUMNS)[number], string> = {
    drive_id: String(drive),
    id,
    text,
    user_email: 'review"er@example.com',
    created_at: created,
  };
  return EXPORT_COMMENT_COLUMNS.map((column) => row[column]);
}

/** Random review comments of drive `drive`: none mostly, else one to three, their values of `forms`. */
function randomComments(g: ReturnType<typeof generator>, forms: OddShare, drive: number): (string | null)[][] {
  if (g.next() >= 0.2) return [];
  return Array.from({ length: 1 + Math.floor(g.next() * 3) }, (_, k) =>
    comment(
      drive,
      draw(g, forms, { common: [String(drive * 3 + k + 1)], odd: FORMS.ids.odd }),
      g.pick(TEXTS),
      draw(g, forms, FORMS.pgTimes),
    ),
  );
}

/** COPY rows (each its columns' values) as a page of them: their bytes side by side, each ending in a newline. */
function pageOf(rows: readonly (readonly (string | null)[])[]): PageComments {
  const bytes = Buffer.from(rows.map((values) => `${values.map(copyText).join('\t')}\n`).join(''));
  const ends: number[] = [];
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 10) ends.push(i);
  const rowStart = (i: number) => (i === 0 ? 0 : ends[i - 1]! + 1);
  return {
    bytes,
    length: ends.length,
    rowStart,
    rowEnd: (i) => ends[i]!,
    row: (i) => copyTextFields(bytes.toString('utf8', rowStart(i), ends[i])),
    firstInteger: (i) => Number(bytes.toString('utf8', rowStart(i), bytes.indexOf(9, rowStart(i)))),
  };
}

/**
 * The page rendered by `renderer`, its drive ids their positions, and the string renderer's lines of the same rows;
 * `comments`: COPY rows of comment() in the order of their drives.
 */
function rendered(
  renderer: ExportRenderer,
  rows: (string | null)[][],
  comments: (string | null)[][] = [],
): { json: string; csv: string; expected: { json: string; csv: string } } {
  const json = new PageBytes(16);
  const csv = new PageBytes(16);
  renderer.renderPage(
    pageOf(rows),
    rows.map((_, i) => i),
    comments.length ? pageOf(comments) : undefined,
    json,
    csv,
  );
  const lines = rows.map((values, i) =>
    exportedDriveLines(values, comments.filter((c) => Number(c[COMMENT_DRIVE]) === i).map(commentOfFields)),
  );
  return {
    json: json.take().toString(),
    csv: csv.take().toString(),
    expected: { json: lines.map((l) => l.json).join(''), csv: lines.map((l) => l.csv).join('') },
  };
}

test("every page's bytes are the string renderer's lines; rows of the common forms are rendered in WebAssembly", () => {
  const g = generator(20261129);
  const renderer = new ExportRenderer();
  let refusedBefore = 0;
  let refusedCommentsBefore = 0;
  for (let page = 0; page < 60; page++) {
    // Pages of the common forms only, and pages of any form (some rows refused, rendered by the string renderer).
    const forms = page % 2 ? ANY : COMMON;
    const rows: (string | null)[][] = [];
    const comments: (string | null)[][] = [];
    for (let n = 0; n < 100; n++) {
      rows.push(randomRow(g, forms));
      comments.push(...randomComments(g, forms, n));
    }
    const { json, csv, expected } = rendered(renderer, rows, comments);
    assert.equal(json, expected.json, `page ${page}`);
    assert.equal(csv, expected.csv, `page ${page}`);
    if (forms === COMMON) {
      assert.equal(renderer.refusedRows, refusedBefore, `page ${page}: a row of the common forms`);
      assert.equal(renderer.refusedComments, refusedCommentsBefore, `page ${page}: comments of the common forms`);
    }
    refusedBefore = renderer.refusedRows;
    refusedCommentsBefore = renderer.refusedComments;
  }
  // Of the 3,000 rows of any form, some were refused, and many were not; some of their drives' comments too.
  assert.ok(renderer.refusedRows > 100 && renderer.refusedRows < 2_500, `${renderer.refusedRows} of 3000 refused`);
  assert.ok(renderer.refusedComments > 5, `${renderer.refusedComments} drives' comments refused`);
});

test('a drive of the forms PostgreSQL stores for the API is rendered in WebAssembly, not refused', () => {
  const renderer = new ExportRenderer();
  const location = jsonbText({
    name: 'Depot, North',
    lat: '52.520008',
    lon: '-13.404954',
    time: '2026-11-23T08:00:00.5Z',
    address: { city: 'Berlin', postalCode: '10115', country: 'DE' },
  });
  const row = [
    '42',
    'DriverA001',
    'submitted',
    '2026-11-23 09:12:04.12+00',
    '2026-11-23 09:12:04+00',
    '12.50',
    'mi',
    '10.5',
    '875',
    'USD',
    null,
    null,
    '3.5',
    'USD',
    'line\nbreak\ttab "quoted", and \\',
    'manual',
    'business',
    'Client visit',
    location,
    null,
  ];
  const comments = [comment(1, '7', 'ok, then'), comment(1, '9', 'line\nbreak "quoted"', '2026-11-23 09:12:04+00')];
  const { json, csv, expected } = rendered(renderer, [row, row], comments);
  assert.equal(json, expected.json);
  assert.equal(csv, expected.csv);
  assert.equal(renderer.refusedRows, 0);
  assert.equal(renderer.refusedComments, 0);
});

test("a row larger than the renderer's memory regions grows them, and the pages after it render the same", () => {
  const renderer = new ExportRenderer();
  const g = generator(7);
  const random = () => randomRow(g, ANY);
  const large = random();
  large[EXPORT_COLUMNS.indexOf('d.description')] = '\u0001"'.repeat(400_000);
  for (const rows of [
    [random(), large, random()],
    [random(), random()],
  ]) {
    const { json, csv, expected } = rendered(renderer, rows);
    assert.equal(json, expected.json);
    assert.equal(csv, expected.csv);
  }
});

test("a row that is not of the export's columns fails the page, as the string renderer does", () => {
  const columns = EXPORT_COLUMNS.map(() => 'x');
  for (const row of [columns.slice(1), [...columns, 'x']]) {
    assert.throws(() => exportedDriveLines(row, []));
    assert.throws(() => rendered(new ExportRenderer(), [row]));
  }
});

test("every instant from 1970 to 9999 is written as the API's time, in the JSON and the CSV, without refusal", () => {
  const g = generator(19700101);
  const renderer = new ExportRenderer();
  const trimmed = (fraction: string) => fraction.replace(/\.?0+$/, '');
  for (let page = 0; page < 20; page++) {
    const rows = Array.from({ length: 100 }, () => {
      const iso = (ms: number) => new Date(ms).toISOString();
      const instant = () => Math.floor(g.next() * 253_402_300_799_999);
      const [reported, modified, started] = [iso(instant()), iso(instant()), iso(instant())];
      const row = randomRow(g, COMMON);
      // PostgreSQL's text of a timestamptz in UTC (its fraction trimmed), and a location's ISO time as stored.
      const pg = (text: string) => `${text.slice(0, 10)} ${text.slice(11, 19)}${trimmed(text.slice(19, 23))}+00`;
      row[EXPORT_COLUMNS.indexOf('r.reported_at')] = pg(reported);
      row[EXPORT_COLUMNS.indexOf('r.modified_at')] = pg(modified);
      row[EXPORT_COLUMNS.indexOf('d.start_location')] = jsonbText({
        lat: '1',
        time: `${started.slice(0, 19)}${g.next() < 0.5 ? trimmed(started.slice(19, 23)) : started.slice(19, 23)}Z`,
      });
      return row;
    });
    const { json, csv, expected } = rendered(renderer, rows);
    assert.equal(json, expected.json, `page ${page}`);
    assert.equal(csv, expected.csv, `page ${page}`);
  }
  assert.equal(renderer.refusedRows, 0);
});
