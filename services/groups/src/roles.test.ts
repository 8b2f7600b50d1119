// The Groups service's two database roles against real PostgreSQL (the rule itself: packages/runtime/src/db.ts
// grantRuntimeAccess, tested in depth in services/users/src/roles.test.ts): the runtime role writes teams and members,
// appends to provisioning_audit, and can neither rewrite nor empty that log nor touch its trigger or the schema.
import { createSchemaRoles, createTestDatabase, type SchemaRoles } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { openDatabase } from './database';

let roles: SchemaRoles;
let app: pg.Client;

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
});

after(async () => {
  await app?.end();
  await roles.drop();
});

test('the runtime role writes teams, members and audit entries', async () => {
  const { rows } = await app.query<{ id: string }>(`INSERT INTO teams (display_name) VALUES ('Roles') RETURNING id`);
  const team = rows[0]!.id;
  await app.query(`INSERT INTO team_members (team_id, user_id, is_admin) VALUES ($1, 'RoleTest01', true)`, [team]);
  await app.query(`UPDATE teams SET display_name = 'Roles 2', version = version + 1 WHERE id = $1`, [team]);
  await app.query(`DELETE FROM team_members WHERE team_id = $1`, [team]);
  await app.query(`INSERT INTO provisioning_audit (actor, operation, team_id) VALUES ('okta', 'patch', $1)`, [team]);
  const audit = await app.query<{ actor: string }>(`SELECT actor FROM provisioning_audit WHERE team_id = $1`, [team]);
  assert.deepEqual(audit.rows, [{ actor: 'okta' }]);
});

test('provisioning_audit: no UPDATE, DELETE, TRUNCATE; its trigger and the tables out of reach', async () => {
  assert.equal(await codeOf(`UPDATE provisioning_audit SET actor = 'someone-else'`), '42501');
  assert.equal(await codeOf(`DELETE FROM provisioning_audit`), '42501');
  assert.equal(await codeOf(`TRUNCATE provisioning_audit`), '42501');
  assert.equal(await codeOf(`DROP TRIGGER provisioning_audit_append_only ON provisioning_audit`), '42501');
  assert.equal(await codeOf(`ALTER TABLE provisioning_audit DISABLE TRIGGER USER`), '42501');
  assert.equal(await codeOf(`DROP TABLE teams`), '42501');
  assert.equal(await codeOf(`ALTER TABLE team_members ADD COLUMN evil text`), '42501');
});
