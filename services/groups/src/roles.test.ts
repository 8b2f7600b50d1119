// The Groups service's two database roles against real PostgreSQL (the rule itself: packages/runtime/src/database/db.ts
// grantRuntimeAccess, tested in depth in services/users/src/roles.test.ts): the runtime role writes teams and members,
// appends to provisioning_audit, and can neither rewrite nor empty that log nor touch its trigger or the schema. As it,
// the database keeps organizations apart: row-level security shows a transaction only its declared organization's
// rows, and composite keys refuse a membership across organizations whatever the transaction declared.
import { status } from '@grpc/grpc-js';
import { acrossOrganizations, inOrganization, type Knex } from '@mileage/runtime/database';
import { createSchemaRoles, createTestDatabase, type SchemaRoles } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { openDatabase } from './database';
import { GroupsRepository } from './groups-repo';

let roles: SchemaRoles;
let app: pg.Client;
let runtimeDb: ReturnType<typeof openDatabase>;

const codeOf = (sql: string) =>
  app.query(sql).then(
    () => undefined,
    (err: { code?: string }) => err.code,
  );

before(async () => {
  roles = await createSchemaRoles(await createTestDatabase('groups_roles'), 'groups');
  const ownerDb = openDatabase({ url: roles.urlOf(roles.owner) });
  try {
    assert.equal((await ownerDb.migrate({ runtimeRole: roles.runtime.role })).grantedTo, roles.runtime.role);
  } finally {
    await ownerDb.close();
  }
  app = new pg.Client({ connectionString: roles.urlOf(roles.runtime) });
  await app.connect();
  await app.query('SET search_path = groups');
  runtimeDb = openDatabase({ url: roles.urlOf(roles.runtime) });
});

after(async () => {
  await app?.end();
  await runtimeDb?.close();
  await roles.drop();
});

test('the runtime role writes teams, members and audit entries', async () => {
  await app.query('BEGIN');
  await app.query(`SELECT set_config('mileage.organization_id', '1', true)`);
  const { rows } = await app.query<{ id: string }>(`INSERT INTO teams (display_name) VALUES ('Roles') RETURNING id`);
  const team = rows[0]!.id;
  await app.query(`INSERT INTO member_organizations (user_id) VALUES ('RoleTest01')`);
  await app.query(`INSERT INTO team_members (team_id, user_id, is_admin) VALUES ($1, 'RoleTest01', true)`, [team]);
  await app.query(`UPDATE teams SET display_name = 'Roles 2', version = version + 1 WHERE id = $1`, [team]);
  await app.query(`DELETE FROM team_members WHERE team_id = $1`, [team]);
  await app.query(`INSERT INTO provisioning_audit (actor, operation, team_id) VALUES ('okta', 'patch', $1)`, [team]);
  const audit = await app.query<{ actor: string }>(`SELECT actor FROM provisioning_audit WHERE team_id = $1`, [team]);
  assert.deepEqual(audit.rows, [{ actor: 'okta' }]);
  await app.query('COMMIT');
});

test('provisioning_audit: no UPDATE or TRUNCATE, no DELETE outside an erasure; its trigger and the tables out of reach', async () => {
  assert.equal(await codeOf(`UPDATE provisioning_audit SET actor = 'someone-else'`), '42501');
  // DELETE is granted for offboarding's erasure (@mileage/runtime/database's eraseOrganization): the trigger refuses
  // every row but those of the organization an erasure transaction declares.
  const deleteInOrganization1 = `DO $$ BEGIN
    PERFORM set_config('mileage.organization_id', '1', true); DELETE FROM provisioning_audit; END $$`;
  assert.equal(await codeOf(deleteInOrganization1), 'P0001');
  await app.query(`SELECT set_config('mileage.erasing_organization', '2', false)`);
  assert.equal(await codeOf(deleteInOrganization1), 'P0001');
  await app.query(`SELECT set_config('mileage.erasing_organization', '', false)`);
  assert.equal(await codeOf(`TRUNCATE provisioning_audit`), '42501');
  assert.equal(await codeOf(`DROP TRIGGER provisioning_audit_append_only ON provisioning_audit`), '42501');
  assert.equal(await codeOf(`ALTER TABLE provisioning_audit DISABLE TRIGGER USER`), '42501');
  assert.equal(await codeOf(`DROP TABLE teams`), '42501');
  assert.equal(await codeOf(`ALTER TABLE team_members ADD COLUMN evil text`), '42501');
});

/** A team of `organizationId` with the given members (each recorded in that organization), written as the runtime. */
async function team(organizationId: number, name: string, userIds: string[]): Promise<number> {
  return inOrganization(runtimeDb.knex, organizationId, async (trx) => {
    const [row] = (await trx('teams').insert({ display_name: name }).returning('id')) as { id: string }[];
    for (const user_id of userIds) {
      await trx('member_organizations').insert({ user_id }).onConflict('user_id').ignore();
      await trx('team_members').insert({ team_id: row!.id, user_id });
    }
    return Number(row!.id);
  });
}

const sqlState = (work: Promise<unknown>) =>
  work.then(
    () => 'committed',
    (err: { code?: string }) => err.code,
  );

test('the database refuses a membership across organizations, whatever the transaction declares', async () => {
  await team(1, 'Acme', ['AcmeUser01']);
  const globexTeam = await team(2, 'Globex', ['GlobexUsr1']);
  const join = (trx: Knex.Transaction, organization_id?: number) =>
    trx('team_members').insert({
      team_id: globexTeam,
      user_id: 'AcmeUser01',
      ...(organization_id && { organization_id }),
    });
  // Inside Globex: the user's recorded organization (Acme) is not the group's: the foreign key refuses (23503).
  assert.equal(await sqlState(inOrganization(runtimeDb.knex, 2, (trx) => join(trx))), '23503');
  // Claiming the user's organization for the row: row-level security refuses an Acme row in a Globex transaction.
  assert.equal(await sqlState(inOrganization(runtimeDb.knex, 2, (trx) => join(trx, 1))), '42501');
  // Re-recording the user in Globex: their organization is recorded once (the primary key refuses).
  assert.equal(
    await sqlState(
      inOrganization(runtimeDb.knex, 2, (trx) => trx('member_organizations').insert({ user_id: 'AcmeUser01' })),
    ),
    '23505',
  );
  // The one door past row-level security does not open the keys: either organization is refused.
  for (const organization of [1, 2])
    assert.equal(await sqlState(acrossOrganizations(runtimeDb.knex, (trx) => join(trx, organization))), '23503');
  // The service's own path (the member's organization recorded ON CONFLICT DO NOTHING, then the membership).
  const viaService = await inOrganization(runtimeDb.knex, 2, (trx) =>
    new GroupsRepository(trx, 2).setMemberRoles(globexTeam, { userId: 'AcmeUser01', isAdmin: false, isDriver: true }),
  ).then(
    () => 'committed',
    (err: { code?: unknown }) => err.code,
  );
  assert.equal(viaService, status.INVALID_ARGUMENT);
  const members = await inOrganization(runtimeDb.knex, 2, (trx) => trx('team_members').where({ team_id: globexTeam }));
  assert.deepEqual(
    members.map((m: { user_id: string }) => m.user_id),
    ['GlobexUsr1'],
  );
});

test('a query that drops its organization filter still sees only the declared organization; none declared, nothing', async () => {
  const acmeTeam = await team(1, 'Filterless Acme', ['Filterles1']);
  const globexTeam = await team(2, 'Filterless Globex', ['Filterles2']);
  await inOrganization(runtimeDb.knex, 2, (trx) =>
    trx('provisioning_audit').insert({ actor: 'okta', operation: 'patch', team_id: globexTeam }),
  );
  // No `organization_id = ?` anywhere: what each table shows is what row-level security lets through.
  const everything = (trx: Knex.Transaction) =>
    Promise.all(
      ['teams', 'team_members', 'member_organizations', 'provisioning_audit'].map(async (table) =>
        (await trx(table).distinct('organization_id')).map((r: { organization_id: string }) =>
          Number(r.organization_id),
        ),
      ),
    );
  assert.deepEqual(await inOrganization(runtimeDb.knex, 2, everything), [[2], [2], [2], [2]]);
  assert.deepEqual(
    await inOrganization(runtimeDb.knex, 2, (trx) =>
      trx('teams').where({ id: acmeTeam }).update({ display_name: 'Gone' }),
    ),
    0,
    'a write misses the other organization’s rows too',
  );
  assert.deepEqual(await runtimeDb.knex.transaction(everything), [[], [], [], []]);
  assert.deepEqual(await everything(runtimeDb.knex as unknown as Knex.Transaction), [[], [], [], []]);
  // An insert that declared no organization has none to take: refused rather than filed anywhere.
  assert.equal(await sqlState(runtimeDb.knex('teams').insert({ display_name: 'Nowhere' })), '42501');
  const acme = await inOrganization(runtimeDb.knex, 1, (trx) =>
    trx('teams').where({ id: acmeTeam }).first('display_name'),
  );
  assert.deepEqual(acme, { display_name: 'Filterless Acme' });
});
