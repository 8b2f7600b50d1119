// The database's copy of the organization alias rule: the CHECKs the migrations wrote (history, so literal copies) are
// the two parts of the rule in @mileage/runtime, character for character.
import { ORGANIZATION_ALIAS_CHARACTERS, ORGANIZATION_ALIAS_LETTER } from '@mileage/runtime/formats';
import { createTestDatabase } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDatabase } from './database';

test("the organizations table's CHECKs on alias are the rule's parts in @mileage/runtime", async (t) => {
  const testDb = await createTestDatabase('users_alias_rule');
  const db = openDatabase({ url: testDb.url });
  t.after(async () => {
    await db.close();
    await testDb.drop();
  });
  await db.migrate();
  const { rows } = await db.knex.raw<{ rows: { definition: string }[] }>(
    `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint
      WHERE conrelid = 'users.organizations'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%alias%'
      ORDER BY 1`,
  );
  assert.deepEqual(
    rows.map((r) => r.definition),
    [
      `CHECK ((alias ~ '${ORGANIZATION_ALIAS_LETTER}'::text))`,
      `CHECK ((alias ~ '^${ORGANIZATION_ALIAS_CHARACTERS}$'::text))`,
    ].sort(),
  );
});
