// Who row-level security applies to, against the run's real PostgreSQL: not to the superuser the tests connect as,
// and to a role that owns nothing, as a service's runtime role is.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { createDatabase, type Database } from './db';
import { roleBypassingPolicies } from './tenancy';
import { createSchemaRoles, createTestDatabase, type SchemaRoles } from './testing';

let roles: SchemaRoles;
let superuser: Database;
let runtime: Database;

before(async () => {
  const testDb = await createTestDatabase('tenancy');
  roles = await createSchemaRoles(testDb, 'tenancy');
  const open = (url: string) =>
    createDatabase({
      url,
      schema: 'tenancy',
      migrationsDirectory: path.join(__dirname, 'no-migrations'),
      applicationName: 'tenancy-test',
    });
  superuser = open(testDb.url);
  runtime = open(roles.urlOf(roles.runtime));
});

after(async () => {
  await superuser?.close();
  await runtime?.close();
  await roles?.drop();
});

test('a superuser is named as bypassing the policies, a role that owns nothing is not', async () => {
  assert.equal(typeof (await roleBypassingPolicies(superuser.knex)), 'string');
  assert.equal(await roleBypassingPolicies(runtime.knex), undefined);
});
