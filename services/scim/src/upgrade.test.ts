// The upgrade from the release whose SCIM service kept title, phone numbers, a group's externalId and the audit log
// (scim.user_attributes, group_attributes, audit_log, reconciled by a write journal) to owners that keep them:
// today's migrations, data in today's shape, then the upgrade, each service as its own least-privileged role.
import { openDatabase as openGroupsDatabase } from '@mileage/groups';
import type { Knex } from '@mileage/runtime';
import { createTestDatabase, type TestDatabase } from '@mileage/runtime/testing';
import { openDatabase as openUsersDatabase } from '@mileage/users';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { openDatabase } from './database';

/** The first migration of the release in which every attribute has one owner. */
const OWNERS_RELEASE = '20261123100000';

let testDb: TestDatabase;
const suffix = randomBytes(4).toString('hex');
const roles = { users: `t_users_${suffix}`, groups: `t_groups_${suffix}`, scim: `t_scim_${suffix}` };
const password = randomBytes(12).toString('hex');
let admin: pg.Client;

const asRole = (schema: keyof typeof roles) => {
  const url = new URL(testDb.url);
  url.username = roles[schema];
  url.password = password;
  return url.toString();
};

/** Applies a service's migrations older than the owners' release, one by one, as a database of that time would be. */
async function migrateToPreviousRelease(knex: Knex): Promise<void> {
  const [, pending] = (await knex.migrate.list()) as [unknown[], { file: string }[]];
  for (const { file } of pending) if (file < OWNERS_RELEASE) await knex.migrate.up({ name: file });
}

before(async () => {
  testDb = await createTestDatabase('upgrade');
  admin = new pg.Client({ connectionString: testDb.url });
  await admin.connect();
  // As npm start and the chart's database set-up: one login role per service, owning only its schema.
  for (const [schema, role] of Object.entries(roles)) {
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
    await admin.query(`CREATE SCHEMA ${schema} AUTHORIZATION ${role}`);
    await admin.query(`REVOKE ALL ON SCHEMA ${schema} FROM PUBLIC`);
  }
});

after(async () => {
  await admin.end();
  await testDb.drop();
  const cleanup = new pg.Client({ connectionString: new URL('/postgres', testDb.url).toString() });
  await cleanup.connect();
  try {
    for (const role of Object.values(roles)) await cleanup.query(`DROP ROLE IF EXISTS ${role}`);
  } finally {
    await cleanup.end();
  }
});

test('an upgrade moves every SCIM attribute and the audit trail from the SCIM schema to the owners', async () => {
  const users = openUsersDatabase({ url: asRole('users') });
  const groups = openGroupsDatabase({ url: asRole('groups') });
  const scim = openDatabase({ url: asRole('scim') });
  try {
    for (const db of [users, groups, scim]) await migrateToPreviousRelease(db.knex);

    // Data in the previous release's shape.
    await users.knex('users').insert({ id: 'Upgrade001', user_name: 'upgrade@example.com', version: 3 });
    await users.knex('users').insert({ id: 'Upgrade002', user_name: 'plain@example.com' });
    const [team] = (await groups.knex('teams').insert({ display_name: 'Upgraders' }).returning('id')) as {
      id: string;
    }[];
    const attributes = {
      title: 'Fleet manager',
      phoneNumbers: [{ value: '+1 555 0100', type: 'work' }],
      name: { middleName: 'Q' },
    };
    await scim.knex('user_attributes').insert({ user_id: 'Upgrade001', attributes: JSON.stringify(attributes) });
    await scim.knex('group_attributes').insert({ group_id: Number(team!.id), external_id: 'okta-upgraders' });
    const audit = (resourceType: string, resourceId: string, operation: string) => ({
      actor: 'okta',
      operation,
      resource_type: resourceType,
      resource_id: resourceId,
      request_id: `req-${operation}`,
      write_id: randomUUID(),
      after: JSON.stringify({ id: resourceId }),
    });
    await scim
      .knex('audit_log')
      .insert([
        audit('User', 'Upgrade001', 'create'),
        audit('Group', team!.id, 'patch'),
        audit('User', 'Upgrade001', 'patch'),
      ]);
    await scim.knex('pending_writes').insert({
      write_id: randomUUID(),
      actor: 'okta',
      operation: 'patch',
      resource_type: 'User',
      resource_id: 'Upgrade002',
    });

    // The owners take data the SCIM role has not opened to them yet: they refuse, and nothing is half done.
    await assert.rejects(users.migrate(), /apply the SCIM service migrations first/);
    // An unsettled write of the previous release may still lack its audit entry: the SCIM migration waits for it.
    await assert.rejects(scim.migrate(), /not settled yet/);
    await scim.knex('pending_writes').delete();

    // The upgrade, in the order the chart's hooks and npm start run it: SCIM first, then the owners.
    await scim.migrate();
    await users.migrate();
    await groups.migrate();

    const [upgraded] = await users.knex('users').where({ id: 'Upgrade001' });
    assert.deepEqual(upgraded.scim_attributes, attributes);
    assert.equal(Number(upgraded.version), 3, 'the version (the ETag clients hold) is unchanged');
    const [plain] = await users.knex('users').where({ id: 'Upgrade002' });
    assert.equal(plain.scim_attributes, null);
    const [upgradedTeam] = await groups.knex('teams').where({ id: team!.id });
    assert.equal(upgradedTeam.external_id, 'okta-upgraders');

    const userAudit = await users.knex('provisioning_audit').orderBy('id');
    assert.deepEqual(
      userAudit.map((a: { operation: string; user_id: string; actor: string; request_id: string }) => [
        a.operation,
        a.user_id,
        a.actor,
        a.request_id,
      ]),
      [
        ['create', 'Upgrade001', 'okta', 'req-create'],
        ['patch', 'Upgrade001', 'okta', 'req-patch'],
      ],
    );
    const groupAudit = await groups.knex('provisioning_audit');
    assert.deepEqual(
      groupAudit.map((a: { operation: string; team_id: string }) => [a.operation, Number(a.team_id)]),
      [['patch', Number(team!.id)]],
    );

    // What the SCIM schema kept is handed over: the attribute tables are empty, the journal's tables are gone.
    assert.equal((await scim.knex('user_attributes')).length, 0);
    assert.equal((await scim.knex('group_attributes')).length, 0);
    const tables = async (db: { knex: Knex }, schema: string) =>
      (
        await db.knex.raw<{ rows: { tablename: string }[] }>('SELECT tablename FROM pg_tables WHERE schemaname = ?', [
          schema,
        ])
      ).rows.map((r) => r.tablename);
    assert.ok(!(await tables(scim, 'scim')).includes('pending_writes'));
    assert.ok(!(await tables(users, 'users')).includes('write_requests'));
    assert.ok(!(await tables(groups, 'groups')).includes('write_requests'));
    // The owners were given only what the hand-over needs: reading the archive, not changing it.
    await assert.rejects(users.knex('scim.audit_log').delete(), /permission denied|append-only/);
  } finally {
    for (const db of [users, groups, scim]) await db.close();
  }
});

test('a fresh installation has nothing to hand over: the SCIM schema keeps no tables of the old design', async () => {
  const fresh = await createTestDatabase('fresh');
  const scim = openDatabase({ url: fresh.url });
  const users = openUsersDatabase({ url: fresh.url });
  try {
    await scim.migrate();
    await users.migrate();
    const { rows } = await scim.knex.raw<{ rows: { tablename: string }[] }>(
      `SELECT tablename FROM pg_tables WHERE schemaname = 'scim' AND tablename NOT LIKE 'knex_%'`,
    );
    assert.deepEqual(rows, []);
  } finally {
    await scim.close();
    await users.close();
    await fresh.drop();
  }
});
