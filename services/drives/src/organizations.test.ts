// The Drives schema's organization isolation as the runtime role (which row-level security applies to, unlike the
// superuser of the other tests): a query without its organization filter sees only the declared organization, a
// report cannot name another organization than its drive's nor a comment another than its report's, and the
// housekeeping purge reaches every organization.
import { acrossOrganizations, inOrganization, type Knex } from '@mileage/runtime/database';
import { OutboxRelay, recordEvent, type OutboxRow } from '@mileage/runtime/outbox';
import { Metrics } from '@mileage/runtime/telemetry';
import { createSchemaRoles, createTestDatabase, type SchemaRoles } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openDatabase } from './database';
import { purgeTombstones } from './drives-repo';

let roles: SchemaRoles;
let runtimeDb: ReturnType<typeof openDatabase>;
const drives: Record<number, number> = {};

before(async () => {
  roles = await createSchemaRoles(await createTestDatabase('drives_orgs'), 'drives');
  const ownerDb = openDatabase({ url: roles.urlOf(roles.owner) });
  try {
    await ownerDb.migrate({ runtimeRole: roles.runtime.role });
  } finally {
    await ownerDb.close();
  }
  runtimeDb = openDatabase({ url: roles.urlOf(roles.runtime) });
  for (const organization of [1, 2])
    drives[organization] = await inOrganization(runtimeDb.knex, organization, async (trx) => {
      const [row] = (await trx('drives')
        .insert({
          user_id: `Driver000${organization}`,
          started_at: '2026-11-01T08:00:00Z',
          ended_at: '2026-11-01T09:00:00Z',
          entry: 'manual',
        })
        .returning('id')) as { id: string }[];
      const drive_id = Number(row!.id);
      await trx('drive_reports').insert({
        drive_id,
        group_id: organization,
        status: 'submitted',
        ended_at: '2026-11-01T09:00:00Z',
      });
      await trx('review_comments').insert({ drive_id, text: 'Checked', user_email: 'reviewer@example.com' });
      await trx('drive_tombstones').insert({
        drive_id: drive_id + 1000,
        user_id: `Driver000${organization}`,
        drive: '{}',
      });
      await trx('report_tombstones').insert({
        drive_id: drive_id + 1000,
        group_id: organization,
        user_id: `Driver000${organization}`,
      });
      await recordEvent(trx, {
        type: 'drive.reported',
        groupId: String(organization),
        userId: `Driver000${organization}`,
        data: { drive_id },
      });
      return drive_id;
    });
});

after(async () => {
  await runtimeDb?.close();
  await roles?.drop();
});

const TABLES = ['drives', 'drive_reports', 'review_comments', 'drive_tombstones', 'report_tombstones', 'outbox'];
/** Which organizations' rows each table shows, with no organization filter of its own. */
const organizationsSeen = (trx: Knex.Transaction) =>
  Promise.all(
    TABLES.map(async (table) =>
      (await trx(table).distinct('organization_id').orderBy('organization_id')).map((r: { organization_id: string }) =>
        Number(r.organization_id),
      ),
    ),
  );

test('a query that drops its organization filter sees only the declared organization; none declared, nothing', async () => {
  assert.deepEqual(
    await inOrganization(runtimeDb.knex, 2, organizationsSeen),
    TABLES.map(() => [2]),
  );
  assert.deepEqual(
    await runtimeDb.knex.transaction(organizationsSeen),
    TABLES.map(() => []),
  );
  assert.deepEqual(
    await acrossOrganizations(runtimeDb.knex, organizationsSeen),
    TABLES.map(() => [1, 2]),
  );
});

test('the outbox relay takes every organization’s events through row-level security, and leaves none', async () => {
  const published: OutboxRow[] = [];
  const metrics = new Metrics('drives');
  const relay = new OutboxRelay({
    knex: runtimeDb.knex,
    metrics,
    publish: async (rows) => void published.push(...rows),
  });
  // The pending-events gauge counts every organization's events too.
  assert.match(await metrics.registry.metrics(), /^outbox_pending_events\{service="drives"\} 2$/m);
  assert.equal(await relay.run(), 2);
  assert.deepEqual(published.map((r) => Number(r.organization_id)).sort(), [1, 2]);
  assert.deepEqual(await acrossOrganizations(runtimeDb.knex, (trx) => trx('outbox').select('id')), []);
});

/** A row of organization 1 that names organization 2's drive: 'committed', or the database's error code. */
const insertedInOrganization1 = (table: string, row: Record<string, unknown>) =>
  acrossOrganizations(runtimeDb.knex, (trx) =>
    trx(table).insert({ drive_id: drives[2], organization_id: 1, ...row }),
  ).then(
    () => 'committed',
    (err: { code?: string }) => err.code,
  );

test('a comment of another organization than its report’s is refused by the database', async () => {
  const refused = await insertedInOrganization1('review_comments', { text: 'Not yours', user_email: 'a@example.com' });
  assert.equal(refused, '23503');
});

test('a report of another organization than its drive’s is refused by the database', async () => {
  await inOrganization(runtimeDb.knex, 2, async (trx) => {
    await trx('review_comments').where({ drive_id: drives[2] }).delete();
    await trx('drive_reports').where({ drive_id: drives[2] }).delete();
  });
  const refused = await insertedInOrganization1('drive_reports', {
    group_id: 1,
    status: 'submitted',
    ended_at: '2026-11-01T09:00:00Z',
  });
  assert.equal(refused, '23503');
});

test('the housekeeping purges the tombstones of every organization', async () => {
  await acrossOrganizations(runtimeDb.knex, async (trx) => {
    for (const table of ['drive_tombstones', 'report_tombstones'])
      await trx(table).update({ modified_at: trx.raw(`now() - interval '100 days'`) });
  });
  const purged = await purgeTombstones(runtimeDb.knex, 90);
  assert.deepEqual([purged.drives, purged.reports], [2, 2]);
});
