// The seeding decision under row-level security: a database whose users all belong to some organization is not
// empty, also for a role that is no superuser (the owner of an external DATABASE_URL, on which RLS is forced).
import { organizationIsolationStatements, ORGANIZATION_SETTING } from '@mileage/runtime/database';
import { createSchemaRoles, createTestDatabase } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { seedDemoData, type SeedTargets } from './seed';

test('seeds only a database without users, whichever organization holds them', async () => {
  const roles = await createSchemaRoles(await createTestDatabase('seed'), 'users');
  const ownerUrl = roles.urlOf(roles.owner);
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  try {
    await owner.query('SET search_path = users');
    await owner.query('CREATE TABLE users (id text PRIMARY KEY, organization_id bigint NOT NULL)');
    for (const statement of organizationIsolationStatements('users')) await owner.query(statement);
    // Seeding starts with the first organization: a stub that says so instead of seeding.
    const started = new Error('seeding started');
    const refuse = () => Promise.reject(started);
    const targets = {
      adminUrl: ownerUrl,
      organizations: { getOrganization: refuse, createOrganization: refuse },
    } as unknown as SeedTargets;
    await assert.rejects(seedDemoData(targets), started, 'an empty database is seeded');

    await owner.query('BEGIN');
    await owner.query('SELECT set_config($1, $2, true)', [ORGANIZATION_SETTING, '2']);
    await owner.query(`INSERT INTO users (id, organization_id) VALUES ('GlobexBob1', 2)`);
    await owner.query('COMMIT');
    assert.equal(await seedDemoData(targets), false, "organization 2's user makes it not empty");
  } finally {
    await owner.end();
    await roles.drop();
  }
});
