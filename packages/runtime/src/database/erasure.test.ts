// The erasure's batches against the run's real PostgreSQL: a short batch does not end a table while rows are left.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import knexFactory, { type Knex } from 'knex';
import { createTestDatabase, type TestDatabase } from '../testing';
import { CREATE_ERASED_ROWS_TABLE, eraseOrganizationBatches, type ErasurePlan } from './erasure';

let database: TestDatabase;
let knex: Knex;
const plan: ErasurePlan = { schema: 'public', tables: [{ table: 'items' }], organizationFree: {} };

before(async () => {
  database = await createTestDatabase('erasure');
  knex = knexFactory({ client: 'pg', connection: database.url, pool: { min: 0, max: 4 } });
  await knex.raw('CREATE TABLE items (id int PRIMARY KEY, organization_id bigint NOT NULL)');
  await knex.raw(CREATE_ERASED_ROWS_TABLE);
});
after(async () => {
  await knex.destroy();
  await database.drop();
});

const count = async (organizationId: number) =>
  Number((await knex('items').where({ organization_id: organizationId }).count<{ count: string }[]>('*'))[0]!.count);

test('rows deleted by another transaction while a batch waits for them make it short, yet the erasure goes on', async () => {
  await knex('items').del();
  await knex.raw('DELETE FROM erased_rows');
  // Organization 1's rows first, so its first batch is ids 1…100 (the heap's order), then another organization's.
  await knex.raw('INSERT INTO items SELECT i, 1 FROM generate_series(1, 300) i');
  await knex.raw('INSERT INTO items SELECT i, 2 FROM generate_series(301, 350) i');

  const holder = await knex.transaction();
  await holder.raw('SELECT id FROM items WHERE id <= 5 FOR UPDATE');
  const erasing = eraseOrganizationBatches(knex, plan, 1, Infinity, { batchRows: 100 });
  // The first batch waits for the held rows: seen in pg_stat_activity, not guessed with a timer.
  for (;;) {
    const { rows } = await knex.raw<{ rows: unknown[] }>(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
        AND query LIKE 'DELETE FROM "items"%'`,
    );
    if (rows.length) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  await holder.raw('DELETE FROM items WHERE id <= 5');
  await holder.commit();

  const { done, erasedRows } = await erasing;
  assert.equal(done, true);
  assert.equal(await count(1), 0, 'nothing of the organization is left');
  assert.equal(erasedRows.items, 295, 'the rows the other transaction deleted are not counted');
  assert.equal(await count(2), 50, 'the other organization is untouched');
});

test('two runs of the same erasure at once both finish, and count every row once', async () => {
  await knex('items').del();
  await knex.raw('DELETE FROM erased_rows');
  await knex.raw('INSERT INTO items SELECT i, 1 FROM generate_series(1, 1000) i');
  await knex.raw('INSERT INTO items SELECT i, 2 FROM generate_series(1001, 1050) i');
  const [first, second] = await Promise.all([
    eraseOrganizationBatches(knex, plan, 1, Infinity, { batchRows: 37 }),
    eraseOrganizationBatches(knex, plan, 1, Infinity, { batchRows: 37 }),
  ]);
  assert.equal(first.done && second.done, true);
  assert.equal(await count(1), 0);
  assert.equal(second.erasedRows.items, 1000);
  assert.equal(await count(2), 50);
});
