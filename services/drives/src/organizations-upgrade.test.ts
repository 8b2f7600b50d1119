// The upgrade into organizations with zero downtime, from the previous release's schema with data: its replicas keep
// writing drives, reports, review comments and events (declaring no organization) after the expand migrations,
// everything lands in organization 1, and after the contract migrations the organizations are isolated.
import { drivesV1 } from '@mileage/proto';
import { acrossOrganizations, grantRuntimeAccess } from '@mileage/runtime/database';
import { asOrganization, createSchemaRoles, createTestDatabase } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { openDatabase } from './database';
import { startDrivesService, startTestGroups } from './service.fixture';

const ORGANIZATIONS_RELEASE = '20261126100000';

test('drives upgrade into organization 1 while the previous release serves', { timeout: 60_000 }, async (t) => {
  const roles = await createSchemaRoles(await createTestDatabase('drives_upgrade'), 'drives');
  const owner = openDatabase({ url: roles.urlOf(roles.owner) });
  const runtime = openDatabase({ url: roles.urlOf(roles.runtime) });
  const groups = await startTestGroups();
  // A replica of the previous release: the runtime role, declaring no organization.
  const oldReplica = new pg.Client({ connectionString: roles.urlOf(roles.runtime) });
  t.after(async () => {
    await oldReplica.end();
    await groups.close();
    await runtime.close();
    await owner.close();
    await roles.drop();
  });
  const [, pending] = (await owner.knex.migrate.list()) as [unknown[], { file: string }[]];
  for (const { file } of pending) if (file < ORGANIZATIONS_RELEASE) await owner.knex.migrate.up({ name: file });
  await grantRuntimeAccess(owner.knex, 'drives', roles.runtime.role, []);
  await oldReplica.connect();
  await oldReplica.query('SET search_path = drives');
  /** A drive reported to group 7 and its event, as the previous release wrote them; deleted ones leave tombstones. */
  const oldDrive = async (day: number) => {
    const ended = `2026-11-${day}T09:00:00Z`;
    const { rows } = await oldReplica.query<{ id: string }>(
      `INSERT INTO drives (user_id, started_at, ended_at, entry) VALUES ('OldDriver1', $1, $1, 'manual') RETURNING id`,
      [ended],
    );
    const id = Number(rows[0]!.id);
    await oldReplica.query(
      `INSERT INTO drive_reports (drive_id, group_id, status, ended_at) VALUES ($1, 7, 'submitted', $2)`,
      [id, ended],
    );
    await oldReplica.query(
      `INSERT INTO review_comments (drive_id, text, user_email) VALUES ($1, 'Checked', 'reviewer@example.com')`,
      [id],
    );
    await oldReplica.query(
      `INSERT INTO outbox (id, event_type, group_id, user_id, payload) VALUES (gen_random_uuid(), 'drive.reported', 7, 'OldDriver1', '{}')`,
    );
    await oldReplica.query(
      `INSERT INTO drive_tombstones (drive_id, user_id, drive) VALUES ($1 + 1000, 'OldDriver1', '{}')`,
      [id],
    );
    return id;
  };
  const before = await oldDrive(10);
  await owner.migrate({ phase: 'expand', runtimeRole: roles.runtime.role });
  const during = await oldDrive(11);
  await owner.migrate({ phase: 'contract', runtimeRole: roles.runtime.role });

  const service = await startDrivesService(runtime.knex, groups);
  t.after(() => service.close());
  const list = (organizationId: number) =>
    asOrganization(service.client, organizationId).listReportedDrives({
      groupIds: [7],
      limit: 10,
      sortField: drivesV1.SortField.SORT_FIELD_MODIFIED,
      includeDeleted: true,
    });
  const demo = await list(1);
  assert.deepEqual(
    demo.reportedDrives.map((r) => [r.drive!.id, r.drive!.organizationId, r.reviewComments.map((c) => c.text)]),
    [
      [during, 1, ['Checked']],
      [before, 1, ['Checked']],
    ],
  );
  const globex = await list(2);
  assert.deepEqual([globex.reportedDrives, globex.tombstones], [[], []]);
  const feed = await asOrganization(service.client, 1).listUserDrives({
    userId: 'OldDriver1',
    limit: 10,
    classification: drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_ALL,
    sortField: drivesV1.SortField.SORT_FIELD_MODIFIED,
    includeDeleted: true,
  });
  assert.deepEqual(feed.tombstones.map((d) => d.driveId).sort(), [before + 1000, during + 1000].sort());
  // The outbox is under row-level security after the contract phase: its relay reads across organizations.
  const events = await acrossOrganizations(owner.knex, (trx) => trx('outbox').select('organization_id'));
  assert.deepEqual(
    events.map((e: { organization_id: string }) => e.organization_id),
    ['1', '1'],
  );
  assert.deepEqual((await oldReplica.query(`SELECT organization_id FROM outbox`)).rows, [], 'none declared: nothing');
  // After the contract phase a writer that declares no organization writes nothing.
  const late = await oldReplica
    .query(`INSERT INTO drives (user_id, started_at, ended_at, entry) VALUES ('OldDriver1', now(), now(), 'manual')`)
    .then(
      () => 'committed',
      (err: { code?: string }) => err.code,
    );
  assert.equal(late, '42501');
});
