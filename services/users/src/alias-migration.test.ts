// 20261128190000_organization_alias_letter on a database that already holds organizations: an alias of digits only
// stops the migration, named; once renamed the migration adds the CHECK, which then refuses such aliases to any
// writer (an old replica included).
import { createTestDatabase, type TestDatabase } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openDatabase } from './database';

const ALIAS_LETTER = '20261128190000_organization_alias_letter.js';

let testDb: TestDatabase;
let db: ReturnType<typeof openDatabase>;

const pending = async () => ((await db.knex.migrate.list()) as [unknown[], { file: string }[]])[1].map((m) => m.file);

before(async () => {
  testDb = await createTestDatabase('users_alias_letter');
  db = openDatabase({ url: testDb.url });
  await db.knex.raw('CREATE SCHEMA users');
  while ((await pending())[0] !== ALIAS_LETTER) await db.knex.migrate.up();
  // What the release before allowed: aliases of digits (or digits and hyphens) only, beside ordinary ones.
  await db.knex('organizations').insert([
    { name: 'Two', alias: '2' },
    { name: 'Acme', alias: 'acme-2' },
    { name: 'Dashes', alias: '1-800' },
  ]);
});

after(async () => {
  await db.close();
  await testDb.drop();
});

test('an alias without a letter stops the migration, naming each such organization; renamed, it runs', async () => {
  const ids = async (alias: string) => (await db.knex('organizations').where({ alias }).first()).id as string;
  const [two, dashes] = [await ids('2'), await ids('1-800')];
  await assert.rejects(db.migrate({ phase: 'expand' }), (err: Error) => {
    assert.match(err.message, /aliases must contain a letter/);
    assert.ok(err.message.includes(`organization ${two} alias "2"`), err.message);
    assert.ok(err.message.includes(`organization ${dashes} alias "1-800"`), err.message);
    assert.ok(!err.message.includes('acme-2'), err.message);
    return true;
  });
  assert.equal((await pending())[0], ALIAS_LETTER, 'not recorded as applied');

  await db.knex('organizations').where({ alias: '2' }).update({ alias: 'two' });
  await db.knex('organizations').where({ alias: '1-800' }).update({ alias: 'dashes-1-800' });
  assert.equal((await db.migrate({ phase: 'expand' })).applied[0], ALIAS_LETTER);
  await assert.rejects(db.knex('organizations').insert({ name: 'Digits', alias: '42' }), { code: '23514' });
  await assert.rejects(db.knex('organizations').where({ alias: 'two' }).update({ alias: '2' }), { code: '23514' });
  await db.knex('organizations').insert({ name: 'Fine', alias: '42a' });
});
