// An owner's provisioning trail read for an export, against the run's real PostgreSQL: oldest first in (time, id)
// order across pages, entries of one instant and of one millisecond told apart, one organization only.
import assert from 'node:assert/strict';
import knexFactory, { type Knex } from 'knex';
import { after, before, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../testing';
import { createProvisioningAuditTable } from './provisioning-audit';
import { trailOldestFirst } from './trail-export';

let testDb: TestDatabase;
let knex: Knex;

before(async () => {
  testDb = await createTestDatabase('trail_export');
  knex = knexFactory({ client: 'pg', connection: testDb.url });
  await createProvisioningAuditTable(knex, { table: 'trail', column: 'team_id', type: 'bigint' });
  await knex.raw(`ALTER TABLE trail ADD COLUMN organization_id bigint NOT NULL`);
});

after(async () => {
  await knex.destroy();
  await testDb.drop();
});

test('oldest first by (time, id) across pages, to the microsecond, the organization’s entries only', async () => {
  // Inserted out of time order: the ids do not give the trail's order.
  const entries: [string, string, number][] = [
    ['2026-03-01T00:00:00.000300Z', 'c', 1],
    ['2026-03-01T00:00:00.000100Z', 'a', 1],
    ['2026-03-01T00:00:00.000100Z', 'b', 1],
    ['2026-03-01T00:00:00.000100Z', 'theirs', 2],
    ['2026-03-01T00:00:00.000200Z', 'a2', 1],
    ['2025-12-31T23:59:59.999999Z', 'first', 1],
    ['2026-03-01T00:00:00.000300Z', 'd', 1],
  ];
  for (const [at, requestId, organizationId] of entries)
    await knex('trail').insert({
      occurred_at: at,
      actor: 'okta',
      operation: 'patch',
      team_id: 7,
      request_id: requestId,
      organization_id: organizationId,
    });
  const read = await knex.transaction(async (trx) => {
    const rows = [];
    for await (const row of trailOldestFirst(trx, 'trail', 'request_id', 1, 2)) rows.push(row);
    return rows;
  });
  assert.deepEqual(
    read.map((r) => r.request_id),
    ['first', 'a', 'b', 'a2', 'c', 'd'],
  );
  assert.deepEqual(
    read.map((r) => r.at),
    [
      '2025-12-31T23:59:59.999999Z',
      '2026-03-01T00:00:00.000100Z',
      '2026-03-01T00:00:00.000100Z',
      '2026-03-01T00:00:00.000200Z',
      '2026-03-01T00:00:00.000300Z',
      '2026-03-01T00:00:00.000300Z',
    ],
  );
});
