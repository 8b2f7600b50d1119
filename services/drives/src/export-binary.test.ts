// The export's binary COPY rows written as COPY's text (ExportRenderer.textRows) against PostgreSQL's own text of the
// same rows, from the test PostgreSQL: random values of every kind textFromBinary writes, byte for byte, and the values
// it leaves to a page read in text.
import { columnTypes, copyBinaryRows, copyOutRows } from '@mileage/runtime/database';
import { CopiedRows, PageBytes } from '@mileage/runtime/worker';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { BINARY_KINDS, binaryKinds } from './export-binary';
import { exportReportedDrivesPage } from './export-pages';
import { ExportRenderer } from './export-render';
import { generator } from './generator.fixture';

const COLUMNS = [
  ['id', 'bigint'],
  ['label', 'text'],
  ['code', 'char(10)'],
  ['name', 'varchar(40)'],
  ['location', 'jsonb'],
  ['at', 'timestamptz'],
  ['at_ms', 'timestamptz(3)'],
  ['amount', 'numeric(10, 2)'],
  ['value', 'numeric'],
  ['count', 'bigint'],
] as const;

const TEXTS = [
  'Client visit',
  'Ünïcödé 🚗 drive',
  'quote " and \\ backslash',
  'line\nbreak\ttab\r',
  'control \u0001\u0008\u000b\u000c\u001f\u007f',
  '\\N',
  '',
  'a,b',
];
const LOCATIONS = [
  { name: 'Office', lat: '41.8781', lon: '-87.6298', time: '2026-11-01T10:00:00Z', address: { city: 'Chicago' } },
  { name: 'Tab\there "quoted" \\ back', lat: null, address: null },
  { n: 1.5e300, small: -0.000001, list: [1, 'two', null, true, { k: 'v\n' }] },
  [],
  'just a string',
];

describe('ExportRenderer.textRows', () => {
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  before(async () => {
    await client.connect();
    await client.query("SET TIME ZONE 'UTC'");
    await client.query(
      `CREATE TEMP TABLE binary_rows (${COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ')})`,
    );
  });
  after(() => client.end());

  const textOf = async (query: string) => (await copyOutRows(client, query)).bytes.toString('latin1');
  async function binaryAsText(query: string, renderer = new ExportRenderer()) {
    const kinds = binaryKinds(await columnTypes(client, query));
    assert.ok(kinds, 'every column of a kind textFromBinary writes');
    const rows = renderer.textRows(await copyBinaryRows(client, query), kinds, new PageBytes(16));
    return rows && { text: rows.bytes.toString('latin1'), rows };
  }

  it('writes random rows of every kind as PostgreSQL writes their text, byte for byte', async () => {
    for (const seed of [1, 2, 3]) {
      const { next, pick, maybe } = generator(seed);
      const int = (digits: number) => Math.floor(next() * 10 ** digits) * (next() < 0.3 ? -1 : 1);
      const time = () => {
        const year = pick([1, 99, 1969, 1970, 2000, 2026, 2026, 9999]);
        const micros = pick([0, 0, 100_000, 120_000, 123_000, 123_456, 1, 999_999]);
        const millis = Date.UTC(2001, 0, 1) + Math.floor(next() * 365 * 86_400_000);
        const iso = new Date(millis).toISOString().slice(4, 19).replace('T', ' ');
        return `${String(year).padStart(4, '0')}${iso}.${String(micros).padStart(6, '0')}+00`;
      };
      const rows = Array.from({ length: 400 }, (_, i) => [
        i + 1,
        maybe(pick(TEXTS)),
        maybe(pick(['ABCDEFGHIJ', 'short', ''])),
        maybe(pick(TEXTS).slice(0, 40)),
        maybe(JSON.stringify(pick(LOCATIONS))),
        maybe(time()),
        maybe(time()),
        maybe(pick([`${int(6)}.${int(2) % 100}`.replace('.-', '.'), '0', '0.5', '-0.01', '99999999.99'])),
        maybe(pick(['0', '0.000', '1e-20', '-123456789012345678901234.5', '10000', '1.10', `${int(12)}`, '0.0001'])),
        maybe(pick([0, -1, int(15), '9223372036854775807', '-9223372036854775808'])),
      ]);
      await client.query('TRUNCATE binary_rows');
      await client.query(`INSERT INTO binary_rows SELECT * FROM json_populate_recordset(NULL::binary_rows, $1::json)`, [
        JSON.stringify(rows.map((row) => Object.fromEntries(COLUMNS.map(([name], k) => [name, row[k]])))),
      ]);
      const query = 'SELECT * FROM binary_rows ORDER BY id';
      const written = await binaryAsText(query);
      assert.ok(written, `seed ${seed}: a page refused`);
      assert.equal(written.text, await textOf(query), `seed ${seed}`);
      assert.equal(written.rows.length, 400);
      assert.equal(written.rows.firstInteger(399), 400);
    }
  });

  it('writes an empty page as no rows', async () => {
    const written = await binaryAsText('SELECT * FROM binary_rows WHERE false');
    assert.equal(written?.rows.length, 0);
  });

  it('leaves a page holding a value it does not write to be read in text: infinities, NaN, years past 9999, BC', async () => {
    for (const [column, value] of [
      ['at', 'infinity'],
      ['at_ms', '-infinity'],
      ['at', '10000-01-01 00:00:00+00'],
      ['at', '0001-12-31 23:59:59+00 BC'],
      ['value', 'NaN'],
      ['value', 'Infinity'],
      ['value', `1${'0'.repeat(70)}`],
    ]) {
      await client.query('TRUNCATE binary_rows');
      await client.query(`INSERT INTO binary_rows (id, label) VALUES (1, 'before'), (3, 'after')`);
      await client.query(`INSERT INTO binary_rows (id, ${column}) VALUES (2, $1)`, [value]);
      const renderer = new ExportRenderer();
      assert.equal(await binaryAsText('SELECT * FROM binary_rows ORDER BY id', renderer), undefined, value);
      assert.equal(renderer.refusedBinaryPages, 1);
    }
  });

  it('reads a page again in text when its binary rows are not written as text', async () => {
    const reads: string[] = [];
    const text = (bytes: string) => new CopiedRows(Buffer.from(bytes), bytes ? [bytes.length - 1] : []);
    const snapshot = {
      copyBinaryRows: async () => {
        reads.push('binary');
        return { bytes: Buffer.from([0, 1]), length: 1 };
      },
      copyRows: async (query: string) => {
        const comments = query.includes('review_comments');
        reads.push(comments ? 'comments' : 'text');
        return text(comments ? '' : '5\tV000000001\n');
      },
    };
    const binary = { kinds: Uint8Array.of(BINARY_KINDS.INT8), toText: () => undefined };
    const page = await exportReportedDrivesPage(snapshot, 1, 0, 10, undefined, binary);
    assert.deepEqual(reads, ['binary', 'text', 'comments']);
    assert.deepEqual(page.ids, [5]);
  });

  it('reads in text a statement with a column of a kind it does not write', () => {
    const { INT4, INT8, TEXT, TIMESTAMPTZ } = pg.types.builtins;
    assert.deepEqual(
      binaryKinds([INT8, TEXT, TIMESTAMPTZ]),
      Uint8Array.from([BINARY_KINDS.INT8, BINARY_KINDS.TEXT, BINARY_KINDS.TIMESTAMPTZ]),
    );
    assert.equal(binaryKinds([INT8, INT4]), undefined);
  });
});
