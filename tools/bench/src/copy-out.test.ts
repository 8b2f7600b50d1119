// countCopyOut against the test PostgreSQL: every row counted once, and a failing statement rejected with its error.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { countCopyOut } from './copy-out';

describe('countCopyOut', () => {
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  before(() => client.connect());
  after(() => client.end());

  it("counts the rows and bytes of COPY's output", async () => {
    const result = await countCopyOut(client, `SELECT g, 'row ' || g FROM generate_series(1, 2500) g`);
    assert.equal(result.rows, 2500);
    const expected = await client.query<{ n: string }>(
      `SELECT sum(length(g::text || E'\\t' || 'row ' || g || E'\\n')) AS n FROM generate_series(1, 2500) g`,
    );
    assert.equal(result.bytes, Number(expected.rows[0]!.n));
    assert.ok(result.seconds > 0);
  });

  it('rejects with the server error, and the connection still answers', async () => {
    await assert.rejects(countCopyOut(client, 'SELECT * FROM no_such_table'), /no_such_table/);
    assert.equal((await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one, 1);
  });
});
