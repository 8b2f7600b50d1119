// Query plans at a volume where a sequential scan would show, planned as the service runs them: as its runtime role,
// inside a declared organization, under row-level security, with the generic plan a prepared statement settles on.
import {
  createSchemaRoles,
  createTestDatabase,
  planNodes,
  type PlanNode,
  type SchemaRoles,
  type TestDatabase,
} from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { openDatabase } from './database';
import { FIND_BY_USER_NAMES_SQL } from './users-repo';

let testDb: TestDatabase;
let roles: SchemaRoles;
let db: ReturnType<typeof openDatabase>;

before(async () => {
  testDb = await createTestDatabase('users_plans');
  roles = await createSchemaRoles(testDb, 'users', { rolePrefix: 'users_plans' });
  const owner = openDatabase({ url: roles.urlOf(roles.owner) });
  try {
    await owner.migrate({ runtimeRole: roles.runtime.role });
  } finally {
    await owner.close();
  }
  // As the test server's superuser (row-level security does not apply to it): 50 organizations of 2,000 users each.
  db = openDatabase({ url: testDb.url, statementTimeoutMs: 120_000 });
  await db.knex.raw(`INSERT INTO organizations (id, name, alias) OVERRIDING SYSTEM VALUE
    SELECT g, 'Org ' || g, 'org-' || g FROM generate_series(2, 50) g`);
  await db.knex.raw(`INSERT INTO users (id, user_name, organization_id)
    SELECT 'U' || lpad(g::text, 9, '0'), 'Person.' || (g % 2000) || '@Example.com', 1 + g / 2000
      FROM generate_series(0, 99999) g`);
  await db.knex.raw('ANALYZE users');
});

after(async () => {
  await db.close();
  await roles.drop();
});

test("a batch of userName lookups reads the organization's userName index, not its users", async () => {
  const connection = (await db.knex.client.acquireConnection()) as pg.Client;
  try {
    await connection.query('BEGIN');
    await connection.query(`SET LOCAL ROLE ${roles.runtime.role}`);
    await connection.query(`SELECT set_config('mileage.organization_id', '7', true)`);
    await connection.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
    let i = 0;
    await connection.query(`PREPARE lookups AS ${FIND_BY_USER_NAMES_SQL.replace(/\?/g, () => `$${++i}`)}`);
    const names = ['PERSON.1@example.com', 'person.1999@example.com', 'nobody@example.com'];
    // EXPLAIN takes no parameters: the test's own names, as literals.
    const literal = `ARRAY[${names.map((n) => `'${n}'`).join(', ')}]`;
    const { rows } = await connection.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE lookups(${literal}, 7)`,
    );
    const all = planNodes(rows[0]!['QUERY PLAN'][0].Plan);
    const onUsers = all.filter((n) => n['Relation Name'] === 'users');
    assert.deepEqual(
      onUsers.map((n) => [n['Node Type'], n['Index Name']]),
      [['Index Scan', 'users_organization_user_name_key']],
      JSON.stringify(all.map((n) => n['Node Type'])),
    );
    const buffers = all[0]!['Shared Hit Blocks']! + (all[0]!['Shared Read Blocks'] ?? 0);
    // Three index probes of a few blocks each, not the organization's 2,000 rows.
    assert.ok(buffers < 30, `${buffers} buffers`);
    const found = await connection.query(`EXECUTE lookups(${literal}, 7)`);
    assert.deepEqual(
      found.rows.map((r: { position: string; user_name: string }) => [Number(r.position), r.user_name]),
      [
        [1, 'Person.1@Example.com'],
        [2, 'Person.1999@Example.com'],
      ],
    );
  } finally {
    await connection.query('ROLLBACK');
    await db.knex.client.releaseConnection(connection);
  }
});
