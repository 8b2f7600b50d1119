// The upgrade of a database of the release in which the SCIM service handed its data over to the owners (Users,
// Groups) and kept scim.audit_log as the record of the changes made before: the owners' migrations of that release
// and of this one, each service as its own least-privileged role, then the administrator retires the scim schema.
// SCIM has no migrations any more: the scim schema is written here as that release's hand-over left it.
import { openDatabase as openGroupsDatabase } from '@mileage/groups';
import {
  createDatabase,
  grantRuntimeAccess,
  inOrganization,
  type Database,
  type Knex,
} from '@mileage/runtime/database';
import { createTestDatabase, type TestDatabase } from '@mileage/runtime/testing';
import { openDatabase as openUsersDatabase } from '@mileage/users';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import pg from 'pg';

/** The first migration of the release in which every attribute has one owner. */
const OWNERS_RELEASE = '20261123100000';

interface Upgrade {
  users: Database;
  groups: Database;
  /** The scim schema's owner, as the previous release's migrations ran. */
  scim: Knex;
  admin: pg.Client;
  roles: { users: string; groups: string; scim: string; scimApp: string };
}

/**
 * A database of the release before the owners' (as npm start and the chart's database set-up make it: one login
 * role per service, owning only its schema; the SCIM service's runtime role too), its users and groups schemas
 * migrated that far, closed and dropped when the test ends.
 */
async function previousRelease(t: TestContext): Promise<Upgrade> {
  const testDb: TestDatabase = await createTestDatabase('upgrade');
  const suffix = randomBytes(4).toString('hex');
  const roles = {
    users: `t_users_${suffix}`,
    groups: `t_groups_${suffix}`,
    scim: `t_scim_${suffix}`,
    scimApp: `t_scim_app_${suffix}`,
  };
  const password = randomBytes(12).toString('hex');
  const asRole = (role: string) => {
    const url = new URL(testDb.url);
    url.username = role;
    url.password = password;
    return url.toString();
  };
  const admin = new pg.Client({ connectionString: testDb.url });
  await admin.connect();
  for (const role of Object.values(roles)) await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
  for (const schema of ['users', 'groups', 'scim'] as const) {
    await admin.query(`CREATE SCHEMA ${schema} AUTHORIZATION ${roles[schema]}`);
    await admin.query(`REVOKE ALL ON SCHEMA ${schema} FROM PUBLIC`);
  }
  const users = openUsersDatabase({ url: asRole(roles.users) });
  const groups = openGroupsDatabase({ url: asRole(roles.groups) });
  const scim = createDatabase({
    url: asRole(roles.scim),
    schema: 'scim',
    migrationsDirectory: __dirname,
    applicationName: 'upgrade-test',
  });
  t.after(async () => {
    for (const db of [users, groups, scim]) await db.close();
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
  for (const db of [users, groups]) {
    const [, pending] = (await db.knex.migrate.list()) as [unknown[], { file: string }[]];
    for (const { file } of pending) if (file < OWNERS_RELEASE) await db.knex.migrate.up({ name: file });
  }
  return { users, groups, scim: scim.knex, admin, roles };
}

/**
 * The scim schema as the hand-over left it: the audit log, readable by both owners; each attribute table only when it
 * held data (empty ones were dropped), readable and deletable by its owner.
 */
async function handedOver({ scim, roles }: Upgrade, kept: { attributeTables: boolean }): Promise<void> {
  await scim.raw(`
    CREATE TABLE audit_log (
      id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      occurred_at   timestamptz NOT NULL DEFAULT now(),
      actor         text        NOT NULL,
      operation     text        NOT NULL,
      resource_type text        NOT NULL,
      resource_id   text        NOT NULL,
      request_id    text,
      write_id      uuid        NOT NULL UNIQUE,
      before        jsonb,
      after         jsonb,
      recovered     boolean     NOT NULL DEFAULT false
    )
  `);
  await scim.raw('GRANT USAGE ON SCHEMA scim TO ??, ??', [roles.users, roles.groups]);
  await scim.raw('GRANT SELECT ON audit_log TO ??, ??', [roles.users, roles.groups]);
  if (kept.attributeTables) {
    await scim.raw(`CREATE TABLE user_attributes (user_id char(10) PRIMARY KEY, attributes jsonb NOT NULL)`);
    await scim.raw(`CREATE TABLE group_attributes (group_id bigint PRIMARY KEY, external_id text)`);
    await scim.raw('GRANT SELECT, DELETE ON user_attributes TO ??', [roles.users]);
    await scim.raw('GRANT SELECT, DELETE ON group_attributes TO ??', [roles.groups]);
  }
  // What the SCIM service's runtime role was given by its migrations: the administrator's retirement must drop it.
  await grantRuntimeAccess(scim, 'scim', roles.scimApp, ['audit_log']);
}

/** Users, a team and three audit entries in scim.audit_log (two of a user, one of the team), oldest first. */
async function previousData({ users, groups, scim }: Upgrade): Promise<{ teamId: string }> {
  await users.knex('users').insert({ id: 'Upgrade001', user_name: 'upgrade@example.com', version: 3 });
  await users.knex('users').insert({ id: 'Upgrade002', user_name: 'plain@example.com' });
  const [team] = (await groups.knex('teams').insert({ display_name: 'Upgraders' }).returning('id')) as {
    id: string;
  }[];
  const audit = (resourceType: string, resourceId: string, operation: string) => ({
    actor: 'okta',
    operation,
    resource_type: resourceType,
    resource_id: resourceId,
    request_id: `req-${operation}`,
    write_id: randomUUID(),
    after: JSON.stringify({ id: resourceId }),
  });
  for (const entry of [
    audit('User', 'Upgrade001', 'create'),
    audit('Group', team!.id, 'patch'),
    audit('User', 'Upgrade001', 'patch'),
  ])
    await scim('audit_log').insert(entry);
  return { teamId: team!.id };
}

/** Both owners' migrations, in the order the chart and npm start run them. */
async function upgrade({ users, groups }: Upgrade): Promise<void> {
  await users.migrate();
  await groups.migrate();
}

/**
 * A read of the upgraded owners' tables: everything an installation from before organizations had belongs to its
 * default organization (1), and row-level security shows a transaction only the organization it declares.
 */
const asUpgraded = <T>(knex: Knex, read: (trx: Knex.Transaction) => Promise<T>): Promise<T> =>
  inOrganization(knex, 1, read);

/** The owners' trails: each entry as [operation, resource id, actor, request id]. */
async function trails({ users, groups }: Upgrade): Promise<{ users: string[][]; groups: string[][] }> {
  const entries = async (knex: Knex, column: string) =>
    ((await asUpgraded(knex, (trx) => trx('provisioning_audit').orderBy('id'))) as Record<string, unknown>[]).map((e) =>
      [e.operation, e[column], e.actor, e.request_id].map(String),
    );
  return { users: await entries(users.knex, 'user_id'), groups: await entries(groups.knex, 'team_id') };
}

const expectedTrails = (teamId: string) => ({
  users: [
    ['create', 'Upgrade001', 'okta', 'req-create'],
    ['patch', 'Upgrade001', 'okta', 'req-patch'],
  ],
  groups: [['patch', teamId, 'okta', 'req-patch']],
});

/** The administrator's retirement of the scim schema and roles, as docs/operations.md ("Upgrading") gives it. */
async function retireScimSchema({ admin, roles }: Upgrade): Promise<void> {
  await admin.query('DROP SCHEMA IF EXISTS scim CASCADE');
  await admin.query(`DROP OWNED BY ${roles.scim}, ${roles.scimApp}`);
  await admin.query(`DROP ROLE ${roles.scimApp}, ${roles.scim}`);
}

test('attribute tables that held data: attributes and audit entries move to the owners, each entry once', async (t) => {
  const db = await previousRelease(t);
  await handedOver(db, { attributeTables: true });
  const { teamId } = await previousData(db);
  const attributes = {
    title: 'Fleet manager',
    phoneNumbers: [{ value: '+1 555 0100', type: 'work' }],
    name: { middleName: 'Q' },
  };
  await db.scim('user_attributes').insert({ user_id: 'Upgrade001', attributes: JSON.stringify(attributes) });
  await db.scim('group_attributes').insert({ group_id: Number(teamId), external_id: 'okta-upgraders' });

  await upgrade(db);

  const [upgraded] = await asUpgraded(db.users.knex, (trx) => trx('users').where({ id: 'Upgrade001' }));
  assert.deepEqual(upgraded.scim_attributes, attributes);
  assert.equal(Number(upgraded.version), 3, 'the version (the ETag clients hold) is unchanged');
  const [plain] = await asUpgraded(db.users.knex, (trx) => trx('users').where({ id: 'Upgrade002' }));
  assert.equal(plain.scim_attributes, null);
  const [upgradedTeam] = await asUpgraded(db.groups.knex, (trx) => trx('teams').where({ id: teamId }));
  assert.equal(upgradedTeam.external_id, 'okta-upgraders');
  // The release before copied the entries already: this one finds them there and copies none again.
  assert.deepEqual(await trails(db), expectedTrails(teamId));
  assert.equal((await db.scim('user_attributes')).length, 0, 'taken, not copied');
  assert.equal((await db.scim('group_attributes')).length, 0, 'taken, not copied');
  // The owners were given only what the hand-over needs: reading the archive, not changing it.
  await assert.rejects(db.users.knex('scim.audit_log').delete(), /permission denied/);

  await retireScimSchema(db);
  assert.deepEqual(await trails(db), expectedTrails(teamId));
});

test('attribute tables dropped empty by the hand-over: the audit entries still reach the owners', async (t) => {
  const db = await previousRelease(t);
  await handedOver(db, { attributeTables: false });
  const { teamId } = await previousData(db);

  await upgrade(db);

  assert.deepEqual(await trails(db), expectedTrails(teamId));
  // Nothing of the scim schema is of use any more: the administrator drops it, and nothing is lost.
  await retireScimSchema(db);
  const { rows } = await db.admin.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'scim'`);
  assert.equal(rows.length, 0);
  assert.deepEqual(await trails(db), expectedTrails(teamId));
});

test('a fresh installation has nothing to take over and no scim schema', async () => {
  const fresh = await createTestDatabase('fresh');
  const users = openUsersDatabase({ url: fresh.url });
  const groups = openGroupsDatabase({ url: fresh.url });
  try {
    await users.migrate();
    await groups.migrate();
    const { rows } = await users.knex.raw<{ rows: unknown[] }>(`SELECT 1 FROM pg_namespace WHERE nspname = 'scim'`);
    assert.deepEqual(rows, []);
  } finally {
    await users.close();
    await groups.close();
    await fresh.drop();
  }
});
