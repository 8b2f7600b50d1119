// Offboarding's erasure against real PostgreSQL, the four owners' schemas migrated into one database:
// (1) completeness from the catalog: every table of every schema is either erased or declared free of organizations,
//     an erased table has its organization column and row-level security (or its plan says why not), and no row of
//     the erased organization remains anywhere;
// (2) kill anywhere: the erasing process is killed 20 times at random batches (before or after a COMMIT), then
//     completes; nothing of the organization remains and each table's count is exact;
// (3) random two-organization data: the other organization's rows are identical before and after.
import { eraseOrganization, type ErasurePlan } from '@mileage/runtime/database';
import { createTestDatabase, type TestDatabase } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import * as readline from 'node:readline';
import fc from 'fast-check';
import pg from 'pg';
import { ERASURE_OWNERS } from './erasure';
import { seedOrganization } from './erasure-fixture';

const SYSTEM_SCHEMAS = ['pg_catalog', 'information_schema', 'pg_toast'];

let testDb: TestDatabase;
let client: pg.Client;

before(async () => {
  testDb = await createTestDatabase('erasure');
  for (const owner of ERASURE_OWNERS) {
    const db = owner.openDatabase({ url: testDb.url });
    await db.migrate();
    await db.close();
  }
  client = new pg.Client({ connectionString: testDb.url });
  await client.connect();
});

after(async () => {
  await client.end();
  await testDb.drop();
});

/**
 * Every base table of every schema but PostgreSQL's own, from the catalog, and whether it is isolated by organization
 * (row-level security enabled and forced, with a policy).
 */
async function catalogTables(): Promise<{ schema: string; table: string; columns: string[]; isolated: boolean }[]> {
  const { rows } = await client.query<{ schema: string; table: string; columns: string[]; isolated: boolean }>(
    `SELECT t.table_schema AS schema, t.table_name AS table,
            array_agg(c.column_name::text ORDER BY c.ordinal_position) AS columns,
            bool_and(k.relrowsecurity AND k.relforcerowsecurity
              AND EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = k.oid)) AS isolated
       FROM information_schema.tables t JOIN information_schema.columns c USING (table_schema, table_name)
       JOIN pg_class k ON k.oid = format('%I.%I', t.table_schema, t.table_name)::regclass
      WHERE t.table_type = 'BASE TABLE' AND NOT (t.table_schema = ANY($1)) AND t.table_schema NOT LIKE 'pg_temp%'
      GROUP BY 1, 2 ORDER BY 1, 2`,
    [SYSTEM_SCHEMAS],
  );
  return rows;
}

function planOf(schema: string): ErasurePlan | undefined {
  return ERASURE_OWNERS.find((owner) => owner.plan.schema === schema)?.plan;
}

/**
 * The rows of `organizationId` in each table, found from the catalog by the organization column every erased table
 * must have (checked here, with the row-level security that isolates it) — never by the erasure's list.
 */
async function rowsOfOrganization(organizationId: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const { schema, table, columns, isolated } of await catalogTables()) {
    const plan = planOf(schema);
    const name = `${schema}.${table}`;
    assert.ok(plan, `schema ${schema} has no erasure plan (tables erased or declared organization-free)`);
    const erased = plan.tables.find((t) => t.table === table);
    const free = plan.organizationFree[table];
    assert.ok(erased || free, `${name} is neither erased nor declared organization-free in ${schema}'s plan`);
    assert.ok(!(erased && free), `${name} is both erased and declared organization-free`);
    if (free) continue;
    const column = erased!.organizationColumn ?? 'organization_id';
    assert.ok(columns.includes(column), `${name} has no ${column} column: its rows do not know their organization`);
    if (column === 'organization_id' && !erased!.withoutRowSecurity)
      assert.ok(isolated, `${name} holds organizations' rows without row-level security, and its plan says not why`);
    if (erased!.withoutRowSecurity) assert.ok(!isolated, `${name} is isolated, but its plan says it is not`);
    const { rows } = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${client.escapeIdentifier(schema)}.${client.escapeIdentifier(table)}
        WHERE ${client.escapeIdentifier(column)} = $1`,
      [organizationId],
    );
    counts[name] = Number(rows[0]!.n);
  }
  return counts;
}

/** Every row of `organizationId` in every table, as sorted JSON text: what must not change. */
async function canonicalDump(organizationId: number): Promise<Record<string, string[]>> {
  const dump: Record<string, string[]> = {};
  for (const { schema, table, columns } of await catalogTables()) {
    const column = columns.includes('organization_id') ? 'organization_id' : table === 'organizations' ? 'id' : null;
    const from = `${client.escapeIdentifier(schema)}.${client.escapeIdentifier(table)}`;
    const sql = column
      ? `SELECT to_jsonb(t)::text AS row FROM ${from} t WHERE ${column} = $1 ORDER BY 1`
      : `SELECT to_jsonb(t)::text AS row FROM ${from} t WHERE $1::bigint IS NOT NULL ORDER BY 1`;
    dump[`${schema}.${table}`] = (await client.query<{ row: string }>(sql, [organizationId])).rows.map((r) => r.row);
  }
  return dump;
}

async function eraseInProcess(organizationId: number, batchRows?: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const owner of ERASURE_OWNERS) {
    const db = owner.openDatabase({ url: testDb.url });
    try {
      const erased = await eraseOrganization(db.knex, owner.plan, organizationId, batchRows ? { batchRows } : {});
      for (const [table, n] of Object.entries(erased)) counts[`${owner.plan.schema}.${table}`] = n;
    } finally {
      await db.close();
    }
  }
  return counts;
}

function nonEmpty(counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
}

test('completeness from the catalog: every table is accounted for and nothing of the organization remains', async () => {
  await seedOrganization(client, 11, 3);
  await seedOrganization(client, 12, 3);
  const seeded = await rowsOfOrganization(11);
  // Every erased table holds rows before, or the test would prove nothing about it.
  for (const [table, n] of Object.entries(seeded)) assert.ok(n > 0, `the seed wrote no row of ${table}`);
  const other = await canonicalDump(12);

  const erased = await eraseInProcess(11);

  assert.deepEqual(nonEmpty(await rowsOfOrganization(11)), {});
  assert.deepEqual(erased, seeded, 'the counts of erased_rows are the rows there were');
  assert.deepEqual(await canonicalDump(12), other);
  assert.deepEqual(await eraseInProcess(11), erased, 'a second run erases nothing more');
});

test('kill anywhere: killed 20 times at random batches, the erasure completes exactly', async () => {
  await seedOrganization(client, 21, 60);
  await seedOrganization(client, 22, 5);
  const seeded = await rowsOfOrganization(21);
  const other = await canonicalDump(22);
  const child = path.join(__dirname, 'erasure-child.fixture.js');
  let kills = 0;
  for (;;) {
    // Kill on the k-th progress line, k random; a `committing` line is inside a transaction, before its COMMIT.
    const killOn = kills < 20 ? 1 + Math.floor(Math.random() * 6) : Infinity;
    const proc = spawn(process.execPath, [child, testDb.url, '21', '7'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let seen = 0;
    let done = false;
    for await (const line of readline.createInterface({ input: proc.stdout })) {
      if (line === 'done') done = true;
      else if (++seen === killOn) {
        proc.kill('SIGKILL');
        break;
      }
    }
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
      proc.exitCode !== null || proc.signalCode !== null
        ? resolve([proc.exitCode, proc.signalCode])
        : proc.once('exit', (c, s) => resolve([c, s])),
    );
    if (done) {
      assert.equal(code, 0);
      break;
    }
    assert.equal(signal, 'SIGKILL', 'the erasing process ended without being killed and without finishing');
    kills += 1;
  }
  assert.ok(kills >= 20, `killed ${kills} times`);
  assert.deepEqual(nonEmpty(await rowsOfOrganization(21)), {});
  assert.deepEqual(await eraseInProcess(21), seeded, 'every row counted exactly once across the kills');
  assert.deepEqual(await canonicalDump(22), other);
});

test('random two-organization data: the other organization is identical before and after', async () => {
  let next = 100;
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: 12 }),
      fc.integer({ min: 0, max: 12 }),
      fc.integer({ min: 1, max: 5 }),
      async (erasedRows, otherRows, batchRows) => {
        const [erasing, keeping] = [next++, next++];
        await seedOrganization(client, erasing, erasedRows);
        await seedOrganization(client, keeping, otherRows);
        const before = await canonicalDump(keeping);
        await eraseInProcess(erasing, batchRows);
        assert.deepEqual(nonEmpty(await rowsOfOrganization(erasing)), {});
        assert.deepEqual(await canonicalDump(keeping), before);
      },
    ),
    { numRuns: 15 },
  );
});
