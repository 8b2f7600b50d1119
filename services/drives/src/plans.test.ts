// Query plans at a volume where a sequential scan or a sort would show: every list is an index range scan
// that stops after the page (no OFFSET, no sort of the user's or group's rows). Planned as the service runs them: as
// its runtime role, inside a declared organization, under row-level security.
import { drivesV1 } from '@mileage/proto';
import { readInOrganization, snapshotInOrganization } from '@mileage/runtime/database';
import {
  createSchemaRoles,
  createTestDatabase,
  planNodes,
  type PlanNode,
  type SchemaRoles,
  type TestDatabase,
} from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { openDatabase } from './database';
import { DriveReads } from './drives-repo';
import { exportReportedDrivesPageSql } from './export-pages';
import { COMMENTS_SQL, commentsParameters, EXPORT_COMMENTS_SQL } from './statements';

let testDb: TestDatabase;
let roles: SchemaRoles;
let db: ReturnType<typeof openDatabase>;
/** The list calls of organization 1, each in a read that declared it, as the service makes them. */
const repo = {
  listUserDrives: (...args: Parameters<DriveReads['listUserDrives']>) =>
    readInOrganization(db.knex, 1, (run) => new DriveReads(run, 1).listUserDrives(...args)),
  listReportedDrives: (...args: Parameters<DriveReads['listReportedDrives']>) =>
    readInOrganization(db.knex, 1, (run) => new DriveReads(run, 1).listReportedDrives(...args)),
};

before(async () => {
  testDb = await createTestDatabase('plans');
  roles = await createSchemaRoles(testDb, 'drives');
  const owner = openDatabase({ url: roles.urlOf(roles.owner) });
  try {
    await owner.migrate({ runtimeRole: roles.runtime.role });
  } finally {
    await owner.close();
  }
  // Seeded as the test server's superuser (row-level security does not apply to it). Seeding takes longer than the
  // service's default statement timeout.
  db = openDatabase({ url: testDb.url, statementTimeoutMs: 120_000 });
  // 300,000 drives of 300 users over 90 days; a quarter of the business drives reported to one of 30 groups.
  await db.knex.raw(`
    INSERT INTO drives (organization_id, user_id, started_at, ended_at, distance_amount, distance_units, entry, classification, modified_at)
    SELECT 1, 'P' || lpad((g % 300)::text, 9, '0'), t, t + interval '30 minutes', 10, 'mi', 'automatic',
           (ARRAY['business', 'business', 'personal', 'unclassified'])[1 + g % 4], t + interval '1 hour'
      FROM (SELECT g, date_trunc('milliseconds', now() - interval '90 days' * random()) AS t FROM generate_series(1, 300000) g) s`);
  await db.knex.raw(`
    INSERT INTO drive_reports (organization_id, drive_id, group_id, status, reported_at, modified_at, ended_at)
    SELECT 1, id, 1 + (id % 30), 'submitted', modified_at, modified_at, ended_at FROM drives WHERE classification = 'business' AND id % 4 = 0`);
  // 30,000 deleted drives and 30,000 withdrawn reports over the retention window (the change feed).
  await db.knex.raw(`
    INSERT INTO drive_tombstones (organization_id, drive_id, user_id, modified_at, drive)
    SELECT 1, 1000000 + g, 'P' || lpad((g % 300)::text, 9, '0'), now() - interval '90 days' * random(), '{}'
      FROM generate_series(1, 30000) g`);
  await db.knex.raw(`
    INSERT INTO report_tombstones (organization_id, drive_id, group_id, user_id, modified_at)
    SELECT 1, 2000000 + g, 1 + (g % 30), 'P' || lpad((g % 300)::text, 9, '0'), now() - interval '90 days' * random()
      FROM generate_series(1, 30000) g`);
  // A review comment on one report in six, two on one in twelve.
  await db.knex.raw(`
    INSERT INTO review_comments (organization_id, drive_id, text, user_email)
    SELECT 1, drive_id, 'Checked ' || n, 'reviewer@example.com' FROM drive_reports, generate_series(1, 2) n
     WHERE drive_id % 6 = 0 AND (n = 1 OR drive_id % 12 = 0)`);
  await db.knex.raw('ANALYZE drives');
  await db.knex.raw('ANALYZE drive_reports');
  await db.knex.raw('ANALYZE review_comments');
  await db.knex.raw('ANALYZE drive_tombstones');
  await db.knex.raw('ANALYZE report_tombstones');
});

after(async () => {
  await db.close();
  await roles.drop();
});

/** Runs `action`, captures the list statement it sends (the first that `which` accepts), and returns its plan. */
async function planOf(
  action: () => Promise<unknown>,
  which: (sql: string) => boolean = () => true,
  explain = 'FORMAT JSON',
): Promise<PlanNode> {
  const statements: { sql: string; bindings: unknown[] }[] = [];
  const listener = (q: { sql: string; bindings?: unknown[] }) =>
    statements.push({ sql: q.sql, bindings: q.bindings ?? [] });
  db.knex.on('query', listener);
  try {
    await action();
  } finally {
    db.knex.off('query', listener);
  }
  const list = statements.find((s) => /order by/i.test(s.sql) && /limit/i.test(s.sql) && which(s.sql));
  assert.ok(list, `no list statement among ${statements.map((s) => s.sql).join(' | ')}`);
  return planOfStatement(list.sql, list.bindings, explain);
}

/** The plan of `sql` (`?` placeholders) with `bindings`, as the runtime role in organization 1. */
async function planOfStatement(statement: string, bindings: readonly unknown[], explain = 'FORMAT JSON') {
  const connection = (await db.knex.client.acquireConnection()) as pg.Client;
  try {
    await connection.query('BEGIN');
    await connection.query(`SET LOCAL ROLE ${roles.runtime.role}`);
    await connection.query(`SELECT set_config('mileage.organization_id', '1', true)`);
    const sql = statement.replace(
      /\?/g,
      (() => {
        let i = 0;
        return () => `$${++i}`;
      })(),
    );
    const { rows } = await connection.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (${explain}) ${sql}`, [
      ...bindings,
    ]);
    return rows[0]!['QUERY PLAN'][0].Plan;
  } finally {
    await connection.query('ROLLBACK');
    await db.knex.client.releaseConnection(connection);
  }
}

function assertIndexRangeScan(plan: PlanNode, index: string): void {
  const all = planNodes(plan);
  const types = all.map((n) => n['Node Type']);
  assert.equal(plan['Node Type'], 'Limit', JSON.stringify(types));
  assert.ok(!types.includes('Seq Scan'), `no sequential scan: ${JSON.stringify(types)}`);
  assert.ok(
    !types.some((t) => /Sort/.test(t)),
    `no sort: ${JSON.stringify(all.map((n) => [n['Node Type'], n['Index Name']]))}`,
  );
  assert.ok(
    all.some((n) => n['Index Name'] === index),
    `uses ${index}: ${JSON.stringify(all.map((n) => [n['Node Type'], n['Index Name']]))}`,
  );
}

/** Through the index, never a sequential scan; a sort of what the index found is allowed (a few rows). */
function assertIndexed(plan: PlanNode, index: string): void {
  const all = planNodes(plan);
  assert.ok(!all.some((n) => n['Node Type'] === 'Seq Scan'), 'no sequential scan');
  assert.ok(
    all.some((n) => n['Index Name'] === index),
    `uses ${index}: ${JSON.stringify(all.map((n) => [n['Node Type'], n['Index Name']]))}`,
  );
}

const page = { limit: 100, sortField: 'modified' as const };

describe('list query plans at 300,000 drives', () => {
  test("a user's drives by modified time, all classifications", async () => {
    const plan = await planOf(() => repo.listUserDrives('P000000007', null, page));
    assertIndexRangeScan(plan, 'drives_user_modified_idx');
    assert.ok(
      planNodes(plan).some((n) => n.Filter?.includes('mileage.organization_id')),
      'planned under the row-level security policy',
    );
  });

  test("a user's business drives by modified time, next page after a position", async () => {
    // A keyset position as the service hands it out. It used to be read from the first page, which is empty with this
    // data set, so the statement without a position was planned instead; it is made here.
    const position = { sortTime: new Date().toISOString(), id: Number.MAX_SAFE_INTEGER };
    const plan = await planOf(() => repo.listUserDrives('P000000007', 'business', { ...page, position }));
    assertIndexRangeScan(plan, 'drives_user_class_modified_idx');
  });

  test("a user's drives by end time within bounds", async () => {
    const q = {
      limit: 100,
      sortField: 'ended' as const,
      after: new Date(Date.now() - 60 * 86_400_000).toISOString(),
      before: new Date().toISOString(),
    };
    assertIndexRangeScan(
      await planOf(() => repo.listUserDrives('P000000007', 'personal', q)),
      'drives_user_class_ended_idx',
    );
  });

  test("a group's reported drives by modified time and by end time", async () => {
    assertIndexRangeScan(await planOf(() => repo.listReportedDrives([5], page)), 'drive_reports_group_modified_idx');
    assertIndexRangeScan(
      await planOf(() => repo.listReportedDrives([5], { limit: 100, sortField: 'ended' })),
      'drive_reports_group_ended_idx',
    );
  });

  test('the change feed: the tombstone part of a page goes through its index', async () => {
    const feed = { ...page, includeDeleted: true };
    const tombstones = (sql: string) => /tombstones/.test(sql);
    const live = (sql: string) => !/tombstones/.test(sql);
    // A user's tombstones are few (100 here): PostgreSQL may fetch them through the index and sort them.
    assertIndexed(
      await planOf(() => repo.listUserDrives('P000000007', 'business', feed), tombstones),
      'drive_tombstones_user_modified_idx',
    );
    assertIndexRangeScan(
      await planOf(() => repo.listUserDrives('P000000007', 'business', feed), live),
      'drives_user_class_modified_idx',
    );
    assertIndexRangeScan(
      await planOf(() => repo.listReportedDrives([5], feed), tombstones),
      'report_tombstones_group_modified_idx',
    );
  });

  test("an export's page deep in the organization reads from its position on both sides of the join", async () => {
    const plan = await planOf(
      () =>
        // The statement a page copies, as a query: COPY has no plan of its own to show.
        snapshotInOrganization(db.knex, 1, (trx) => trx.raw(exportReportedDrivesPageSql(1, 200_000))),
      (sql) => /JOIN drives d/.test(sql),
      'ANALYZE, FORMAT JSON',
    );
    // A page of 1,000 reports reads about 4,000 drives (one in four is reported), never the 200,000 before it.
    for (const scan of planNodes(plan).filter((n) => n['Relation Name'])) {
      const rows = (scan as { 'Actual Rows'?: number })['Actual Rows'] ?? 0;
      assert.ok(rows <= 10_000, `${scan['Relation Name']} read ${rows} rows for a page of 1,000`);
    }
  });

  test("a page's review comments, by its drive ids or an export page's range of them: the organization's index", async () => {
    const { rows } = await db.knex.raw<{ rows: { id: string }[] }>(
      'SELECT drive_id AS id FROM drive_reports WHERE group_id = 5 ORDER BY drive_id LIMIT 100',
    );
    const ids = rows.map((r) => Number(r.id));
    // A page's comments are a few hundred at most: PostgreSQL may fetch them through the index and sort them.
    for (const plan of [
      await planOfStatement(COMMENTS_SQL, commentsParameters(1, ids)),
      await planOfStatement(EXPORT_COMMENTS_SQL, [1, 120_000, 124_000]),
    ]) {
      assertIndexed(plan, 'review_comments_organization_drive_idx');
    }
  });

  test('the seeded volume is what the plans were taken at', async () => {
    const rows = await db.knex('drives').count<{ count: string }[]>('* as count');
    assert.equal(Number(rows[0]!.count), 300_000);
    assert.ok(drivesV1.SortField.SORT_FIELD_ENDED > 0);
  });
});

describe('a page deep in a long list', () => {
  // A group with 225,000 reports: the drives not reported yet.
  const group = 99;
  before(async () => {
    await db.knex.raw(`
      INSERT INTO drive_reports (organization_id, drive_id, group_id, status, reported_at, modified_at, ended_at)
      SELECT 1, id, ${group}, 'submitted', modified_at, modified_at, ended_at FROM drives
       WHERE id NOT IN (SELECT drive_id FROM drive_reports)`);
    await db.knex.raw('ANALYZE drive_reports');
  });

  /** Buffers the scan of `index` touched (its index pages and the table rows it returned), from EXPLAIN ANALYZE. */
  async function buffersOf(action: () => Promise<unknown>, index: string): Promise<number> {
    const plan = await planOf(action, () => true, 'ANALYZE, BUFFERS, FORMAT JSON');
    const scan = planNodes(plan).find((n) => n['Index Name'] === index);
    assert.ok(scan, `uses ${index}: ${JSON.stringify(planNodes(plan).map((n) => [n['Node Type'], n['Index Name']]))}`);
    return (scan['Shared Hit Blocks'] ?? 0) + (scan['Shared Read Blocks'] ?? 0);
  }

  /** The keyset position 150 rows before the end of the group's list by `column` (a cursor near its last page). */
  async function deepPosition(column: 'modified_at' | 'ended_at') {
    const {
      rows: [row],
    } = await db.knex.raw<{ rows: { t: Date; id: string }[] }>(
      `SELECT ${column} AS t, drive_id AS id FROM drive_reports WHERE group_id = ?
        ORDER BY ${column}, drive_id OFFSET 150 LIMIT 1`,
      [group],
    );
    return { sortTime: row!.t.toISOString(), id: Number(row!.id) };
  }

  // The statement had the sync horizon (or `before`) and the position as two upper bounds on the sort column, and
  // PostgreSQL started the scan at the horizon, reading every index entry down to the position: at 10 million reports
  // a page near the end took 2.4–2.9 s. A page at the end must cost what the first page costs.
  test('by modified time (horizon and position): the scan starts at the position', async () => {
    const index = 'drive_reports_group_modified_idx';
    const first = await buffersOf(() => repo.listReportedDrives([group], page), index);
    const position = await deepPosition('modified_at');
    const deep = await buffersOf(() => repo.listReportedDrives([group], { ...page, position }), index);
    assert.ok(deep <= 2 * first + 20, `deep page ${deep} buffers, first page ${first}`);
  });

  test('by end time (before and position): the scan starts at the position', async () => {
    const index = 'drive_reports_group_ended_idx';
    const q = { limit: 100, sortField: 'ended' as const, before: new Date().toISOString() };
    const first = await buffersOf(() => repo.listReportedDrives([group], q), index);
    const position = await deepPosition('ended_at');
    const deep = await buffersOf(() => repo.listReportedDrives([group], { ...q, position }), index);
    assert.ok(deep <= 2 * first + 20, `deep page ${deep} buffers, first page ${first}`);
  });
});
