// COPY's text format read back against the test PostgreSQL: every value as PostgreSQL holds it (NULL, `\N` as text,
// tabs, line breaks, backslashes, non-ASCII), pages larger than the first buffer, and a failing statement's error.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { PageBytes } from '../storage/part';
import { copyBinaryRows, copyOutRows as copyPage, copyTextFields, withIntegers } from './copy-out';

/** Every row of a page, decoded. */
async function copyOutRows(client: pg.Client, query: string): Promise<(string | null)[][]> {
  const rows = await copyPage(client, query);
  return Array.from({ length: rows.length }, (_, i) => rows.row(i));
}

describe('copyOutRows', () => {
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  before(() => client.connect());
  after(() => client.end());

  it('gives each row as its columns, escapes read, NULL apart from the text \\N', async () => {
    const texts = [
      'plain',
      'tab\there',
      'line\nbreak\r',
      'back\\slash',
      '\\N',
      '',
      'Ünïcödé 🚗',
      '\b\f\u000b',
      '"quoted"',
    ];
    await client.query('CREATE TEMP TABLE copied (id int, text text, at timestamptz)');
    await client.query(
      `INSERT INTO copied SELECT i, t, '2026-11-29 10:00:00.5+00' FROM unnest($1::text[]) WITH ORDINALITY u(t, i)`,
      [texts],
    );
    await client.query('INSERT INTO copied VALUES (100, NULL, NULL)');
    await client.query("SET TIME ZONE 'UTC'");
    const rows = await copyOutRows(client, 'SELECT id, text, at FROM copied ORDER BY id');
    assert.deepEqual(rows, [
      ...texts.map((t, i) => [String(i + 1), t, '2026-11-29 10:00:00.5+00']),
      ['100', null, null],
    ]);
  });

  it('reads a page larger than its first buffer, every row once and in order', async () => {
    const rows = await copyOutRows(client, `SELECT g, repeat('x', 100) FROM generate_series(1, 5000) g`);
    assert.equal(rows.length, 5000);
    assert.deepEqual(
      rows.map((r) => Number(r[0])),
      Array.from({ length: 5000 }, (_, i) => i + 1),
    );
    assert.ok(rows.every((r) => r[1] === 'x'.repeat(100)));
    assert.deepEqual(await copyOutRows(client, 'SELECT 1 WHERE false'), []);
  });

  it('fills the buffer it is given again, from its start: a reader of many pages keeps two', async () => {
    const page = new PageBytes(16);
    const first = await copyPage(client, `SELECT g, repeat('y', 50) FROM generate_series(1, 300) g`, page);
    assert.equal(first.rowEnd(first.length - 1), first.bytes.length - 1);
    const second = await copyPage(client, 'SELECT 7, NULL', page);
    assert.deepEqual([second.length, second.row(0), second.bytes.toString()], [1, ['7', null], '7\t\\N\n']);
    assert.equal(second.bytes.buffer, first.bytes.buffer, 'the same memory, not a new buffer');
  });

  it("reads a row's first column as an integer from its bytes, as Number reads its text", async () => {
    const firsts = ['0', '7', '007', '123456789012345', '1234567890123456', '-5', '', '12a', '9007199254740993'];
    const rows = await copyPage(
      client,
      `SELECT t, 'rest' FROM unnest(ARRAY[${firsts.map((f) => `'${f}'`).join(',')}]) WITH ORDINALITY u(t, i) ORDER BY i`,
    );
    assert.deepEqual(
      Array.from({ length: rows.length }, (_, i) => rows.firstInteger(i)),
      firsts.map(Number),
    );
    const alone = await copyPage(client, 'SELECT 42');
    assert.equal(alone.firstInteger(0), 42, 'a row of one column');
  });

  it('rejects with the server error, and the connection still answers', async () => {
    await assert.rejects(copyOutRows(client, 'SELECT * FROM no_such_table'), /no_such_table/);
    assert.equal((await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one, 1);
  });
});

describe('copyBinaryRows', () => {
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  before(() => client.connect());
  after(() => client.end());

  it("gives the rows without the format's header and trailer: each its width, then each column's length and bytes", async () => {
    const page = new PageBytes(8);
    const rows = await copyBinaryRows(
      client,
      `SELECT g::bigint, CASE WHEN g = 2 THEN NULL ELSE 'é' END FROM generate_series(1, 3) g`,
      page,
    );
    assert.equal(rows.length, 3);
    const row = (g: number, text: Buffer | null) =>
      Buffer.concat([
        Buffer.from([0, 2, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, g]),
        text ? Buffer.concat([Buffer.from([0, 0, 0, text.length]), text]) : Buffer.from([255, 255, 255, 255]),
      ]);
    const e = Buffer.from('é');
    assert.deepEqual(rows.bytes, Buffer.concat([row(1, e), row(2, null), row(3, e)]));
    assert.equal(rows.bytes.buffer, page.take().buffer, 'in the page it was given');
  });

  it('gives no rows for an empty result, and fails with a failing statement', async () => {
    const rows = await copyBinaryRows(client, 'SELECT 1 WHERE false');
    assert.equal(rows.length, 0);
    assert.equal(rows.bytes.length, 0);
    await assert.rejects(copyBinaryRows(client, 'SELECT * FROM no_such_table'), /no_such_table/);
  });
});

describe('copyTextFields', () => {
  it('reads every escape COPY writes, and an escaped character it does not name as itself', () => {
    assert.deepEqual(copyTextFields('a\\tb\t\\N\t\\\\N\t\\n\\r\\b\\f\\v\\\\\t\\x'), [
      'a\tb',
      null,
      '\\N',
      '\n\r\b\f\v\\',
      'x',
    ]);
  });
});

describe('withIntegers', () => {
  it('writes integers in place of the placeholders', () => {
    assert.equal(withIntegers('SELECT ? WHERE x > ? LIMIT ?', [1, -2, 1000]), 'SELECT 1 WHERE x > -2 LIMIT 1000');
  });

  it('refuses anything but a safe integer, and a count that does not match', () => {
    assert.throws(() => withIntegers('SELECT ?', ['1; DROP TABLE x' as unknown as number]), /not an integer/);
    assert.throws(() => withIntegers('SELECT ?', [1.5]), /not an integer/);
    assert.throws(() => withIntegers('SELECT ?', [2 ** 60]), /not an integer/);
    assert.throws(() => withIntegers('SELECT ?, ?', [1]), /not an integer/);
    assert.throws(() => withIntegers('SELECT ?', [1, 2]), /1 placeholders and 2 values/);
  });
});
