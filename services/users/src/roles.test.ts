// The two database roles of the Users service against real PostgreSQL: the migrations run as the schema's owner and
// grant the runtime role DML on the tables (INSERT, SELECT and the erasure's DELETE only on the append-only provisioning_audit); the runtime
// role can do the service's work and nothing more: no UPDATE/TRUNCATE of the audit log, no DELETE outside an erasure, no DDL, no trigger
// dropped or disabled, no new tables. A table a later migration creates gets DML by the owner's default privileges.
import { createSchemaRoles, createTestDatabase, type SchemaRoles, type TestDatabase } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { openDatabase } from './database';

let testDb: TestDatabase;
let roles: SchemaRoles;
let ownerDb: ReturnType<typeof openDatabase>;
let app: pg.Client;

/** Runs `sql` as the runtime role and returns the PostgreSQL error code it fails with (undefined: it succeeded). */
async function codeOf(sql: string, params: unknown[] = []): Promise<string | undefined> {
  try {
    await app.query(sql, params);
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
}

before(async () => {
  testDb = await createTestDatabase('users_roles');
  roles = await createSchemaRoles(testDb, 'users', { revokePublicCreate: true });
  ownerDb = openDatabase({ url: roles.urlOf(roles.owner) });
  const first = await ownerDb.migrate({ runtimeRole: roles.runtime.role });
  assert.ok(first.applied.length > 0);
  assert.equal(first.grantedTo, roles.runtime.role);
  app = new pg.Client({ connectionString: roles.urlOf(roles.runtime) });
  await app.connect();
  await app.query('SET search_path = users');
  // Row-level security shows a session only the organization it declares (here for the whole session, not a
  // transaction as the service does): the default organization.
  await app.query(`SELECT set_config('mileage.organization_id', '1', false)`);
});

after(async () => {
  await app?.end();
  await ownerDb?.close();
  await roles.drop();
});

test('the runtime role reads and writes the service tables', async () => {
  await app.query(`INSERT INTO users (id, user_name) VALUES ('RoleTest01', 'role-test@example.com')`);
  await app.query(`UPDATE users SET display_name = 'Role Test' WHERE id = 'RoleTest01'`);
  const { rows } = await app.query<{ display_name: string }>(`SELECT display_name FROM users WHERE id = 'RoleTest01'`);
  assert.deepEqual(rows, [{ display_name: 'Role Test' }]);
  await app.query(
    `INSERT INTO outbox (id, event_type, user_id, payload) VALUES (gen_random_uuid(), 'user.deactivated', 'RoleTest01', '{}')`,
  );
  assert.equal((await app.query(`DELETE FROM outbox WHERE user_id = 'RoleTest01'`)).rowCount, 1);
  await app.query(`DELETE FROM users WHERE id = 'RoleTest01'`);
});

test('the audit log: INSERT and SELECT; no UPDATE or TRUNCATE, no DELETE outside an erasure, trigger untouchable', async () => {
  await app.query(
    `INSERT INTO provisioning_audit (actor, operation, user_id, request_id) VALUES ('okta', 'create', 'RoleTest02', 'r1')`,
  );
  const { rows } = await app.query<{ actor: string }>(
    `SELECT actor FROM provisioning_audit WHERE user_id = 'RoleTest02'`,
  );
  assert.deepEqual(rows, [{ actor: 'okta' }]);
  // 42501 insufficient_privilege: refused before the append-only trigger is even reached.
  assert.equal(await codeOf(`UPDATE provisioning_audit SET actor = 'someone-else'`), '42501');
  // DELETE is granted for offboarding's erasure (@mileage/runtime/database's eraseOrganization): the trigger refuses
  // every row but those of the organization an erasure transaction declares.
  assert.equal(await codeOf(`DELETE FROM provisioning_audit`), 'P0001');
  await app.query(`SELECT set_config('mileage.erasing_organization', '2', false)`);
  assert.equal(await codeOf(`DELETE FROM provisioning_audit`), 'P0001');
  await app.query(`SELECT set_config('mileage.erasing_organization', '', false)`);
  assert.equal(await codeOf(`TRUNCATE provisioning_audit`), '42501');
  assert.equal(await codeOf(`DROP TRIGGER provisioning_audit_append_only ON provisioning_audit`), '42501');
  assert.equal(await codeOf(`ALTER TABLE provisioning_audit DISABLE TRIGGER provisioning_audit_append_only`), '42501');
  assert.equal(await codeOf(`DROP FUNCTION provisioning_audit_is_append_only()`), '42501');
  assert.equal(await codeOf(`DROP TABLE provisioning_audit`), '42501');
});

test('no DDL: tables cannot be altered, dropped or created; the migrations table is out of reach', async () => {
  assert.equal(await codeOf(`ALTER TABLE users ADD COLUMN evil text`), '42501');
  assert.equal(await codeOf(`ALTER TABLE users DROP CONSTRAINT users_pkey`), '42501');
  assert.equal(await codeOf(`DROP TABLE users`), '42501');
  assert.equal(await codeOf(`TRUNCATE users`), '42501');
  assert.equal(await codeOf(`CREATE TABLE users.evil (id int)`), '42501');
  assert.equal(await codeOf(`CREATE TABLE public.evil (id int)`), '42501');
  assert.equal(await codeOf(`CREATE INDEX evil_idx ON users (timezone)`), '42501');
  assert.equal(await codeOf(`SELECT * FROM knex_migrations`), '42501');
  assert.equal(await codeOf(`DELETE FROM knex_migrations_lock`), '42501');
  assert.equal(await codeOf(`ALTER SCHEMA users RENAME TO evil`), '42501');
});

test("a table a later migration creates gets DML by the owner's default privileges, its sequence too", async () => {
  await ownerDb.knex.raw(`CREATE TABLE users.later_table (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)`);
  await app.query(`INSERT INTO later_table (v) VALUES ('a')`);
  await app.query(`UPDATE later_table SET v = 'b'`);
  const { rows } = await app.query<{ v: string }>(`SELECT v FROM later_table`);
  assert.deepEqual(rows, [{ v: 'b' }]);
  await app.query(`DELETE FROM later_table`);
  assert.equal(await codeOf(`DROP TABLE later_table`), '42501');
  assert.equal(await codeOf(`TRUNCATE later_table`), '42501');
});

test('the migrations run again: nothing to apply, the grants repaired and still the same', async () => {
  const admin = new pg.Client({ connectionString: testDb.url });
  await admin.connect();
  try {
    // Drift: someone gave the runtime role more than DML on the audit log.
    await admin.query(`GRANT ALL ON users.provisioning_audit TO ${roles.runtime.role}`);
  } finally {
    await admin.end();
  }
  const again = await ownerDb.migrate({ runtimeRole: roles.runtime.role });
  assert.deepEqual(again.applied, []);
  assert.equal(again.grantedTo, roles.runtime.role);
  assert.equal(await codeOf(`UPDATE provisioning_audit SET actor = 'x'`), '42501');
  assert.equal(await codeOf(`TRUNCATE provisioning_audit`), '42501');
});
