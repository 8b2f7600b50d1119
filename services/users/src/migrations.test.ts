// The organizations migrations as an upgrade runs them (expand → rollout → contract) on a database holding users of
// the release before organizations, and back down.
import { createTestDatabase, type TestDatabase } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { openDatabase } from './database';

const EXPAND = '20261126100000_organizations.js';
/** The expand migration after organizations: each SCIM write's attestation nonce. */
const NONCE = '20261126200000_attestation_nonce.js';
/** The expand migration that holds organization aliases to a letter (alias-migration.test.ts). */
const ALIAS_LETTER = '20261128190000_organization_alias_letter.js';
const EXPORTS = '20261128230000_organization_exports.js';
/** The expand migration of offboarding: erased_rows, the offboarding records, the trail's erasure door. */
const ERASURE = '20261129000000_erasure.js';
/** The contract phase's migrations, in order. */
const CONTRACT_MIGRATIONS = ['20261126200000_organization_isolation.js', '20261130210000_outbox_isolation.js'];
const CONTRACT = { directory: path.join(__dirname, 'migrations', 'contract'), tableName: 'knex_migrations_contract' };

let testDb: TestDatabase;
let db: ReturnType<typeof openDatabase>;

before(async () => {
  testDb = await createTestDatabase('users_upgrade');
  db = openDatabase({ url: testDb.url });
  await db.knex.raw('CREATE SCHEMA users');
  // The schema of the release before organizations, with its users.
  for (;;) {
    const [, pending] = (await db.knex.migrate.list()) as [unknown[], { file: string }[]];
    if (pending[0]!.file === EXPAND) break;
    await db.knex.migrate.up();
  }
  await db.knex.raw(`
    INSERT INTO users (id, user_name, display_name, emails)
    SELECT 'Bef' || lpad(g::text, 7, '0'), 'Before' || g || '@Example.com', 'Before ' || g,
           jsonb_build_array(jsonb_build_object('value', 'B' || g || '@Mail.example'))
      FROM generate_series(1, 12000) g`);
});

after(async () => {
  await db.close();
  await testDb.drop();
});

test('expand: old rows join organization 1 with their lookup keys; an old replica keeps writing', async () => {
  const { applied } = await db.migrate({ phase: 'expand' });
  assert.deepEqual(applied, [EXPAND, NONCE, ALIAS_LETTER, EXPORTS, ERASURE]);
  const [row] = await db.knex('users').where({ id: 'Bef0000077' });
  assert.deepEqual(
    [row.organization_id, row.organization_admin, row.user_name_key, row.display_name_key],
    ['1', false, 'before77@example.com', 'before 77'],
  );
  const { rows: unkeyed } = await db.knex.raw(`SELECT count(*)::int AS n FROM users WHERE user_name_key IS NULL`);
  assert.equal(unkeyed[0].n, 0, 'every batch of the backfill ran');
  assert.deepEqual(
    (await db.knex('user_email_values').where({ user_id: 'Bef0000077' })).map((r) => [r.organization_id, r.value_key]),
    [['1', 'b77@mail.example']],
  );
  // What the release before organizations writes, naming no organization: it lands in organization 1.
  await db.knex('users').insert({ id: 'OldWrite01', user_name: 'Old@Example.com', emails: JSON.stringify([{ value: 'O@x.example' }]) }); // prettier-ignore
  await db.knex('provisioning_audit').insert({ actor: 'okta', operation: 'create', user_id: 'OldWrite01' });
  await db.knex.raw(`INSERT INTO outbox (id, event_type, user_id, payload) VALUES (gen_random_uuid(), 'user.deactivated', 'OldWrite01', '{}')`); // prettier-ignore
  const [old] = await db.knex('users').where({ id: 'OldWrite01' });
  assert.deepEqual([old.organization_id, old.user_name_key], ['1', 'old@example.com']);
  assert.equal((await db.knex('provisioning_audit').where({ user_id: 'OldWrite01' }))[0].organization_id, '1');
  assert.equal((await db.knex('outbox').where({ user_id: 'OldWrite01' }))[0].organization_id, '1');
  assert.deepEqual((await db.knex('user_email_values').where({ user_id: 'OldWrite01' })).map((r) => r.value_key), ['o@x.example']); // prettier-ignore
  // Until the contract phase the global userName rule of the old release still holds.
  await assert.rejects(db.knex('users').insert({ id: 'OldWrite02', user_name: 'OLD@example.com' }), { code: '23505' });
});

test('contract, then both phases down and up again', async () => {
  assert.deepEqual((await db.migrate({ phase: 'contract' })).applied, CONTRACT_MIGRATIONS);
  const { rows } = await db.knex.raw(
    `SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class
      WHERE relnamespace = 'users'::regnamespace AND relkind = 'r' AND relrowsecurity ORDER BY relname`,
  );
  assert.deepEqual(
    rows.map((r: { relname: string; relforcerowsecurity: boolean }) => [r.relname, r.relforcerowsecurity]),
    [
      ['organization_exports', true],
      ['outbox', true],
      ['provisioning_audit', true],
      ['scim_tokens', true],
      ['user_email_values', true],
      ['users', true],
    ],
  );
  for (const _ of CONTRACT_MIGRATIONS) await db.knex.migrate.down(CONTRACT);
  await db.knex.migrate.down();
  await db.knex.migrate.down();
  const { rows: exportTables } = await db.knex.raw(`SELECT to_regclass('users.organization_exports') AS t`);
  assert.deepEqual(exportTables, [{ t: null }]);
  await db.knex.migrate.down();
  await db.knex.migrate.down();
  const { rows: nonces } = await db.knex.raw(
    `SELECT 1 FROM information_schema.columns WHERE table_schema = 'users' AND column_name = 'attestation_nonce'`,
  );
  assert.deepEqual(nonces, []);
  await db.knex.migrate.down();
  const { rows: columns } = await db.knex.raw(
    `SELECT table_name FROM information_schema.columns WHERE table_schema = 'users' AND column_name = 'organization_id'`,
  );
  assert.deepEqual(columns, []);
  assert.deepEqual(await db.knex('users').count<{ count: string }[]>('* as count'), [{ count: '12001' }]);
  assert.deepEqual((await db.migrate()).applied, [
    EXPAND,
    NONCE,
    ALIAS_LETTER,
    EXPORTS,
    ERASURE,
    ...CONTRACT_MIGRATIONS,
  ]);
});
