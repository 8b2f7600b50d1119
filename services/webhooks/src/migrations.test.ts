// The organizations upgrade of the Webhooks schema against real PostgreSQL, from the schema before it with data:
// expand (while replicas of the previous release still write without an organization), then contract, then back.
import { inOrganization, type Knex } from '@mileage/runtime/database';
import { createSchemaRoles, createTestDatabase, type SchemaRoles } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { openDatabase } from './database';
import { WebhooksRepository } from './repo';

let roles: SchemaRoles;
/** The schema's owner: it migrates, and row-level security (FORCE) applies to it too. */
let owner: ReturnType<typeof openDatabase>;

before(async () => {
  roles = await createSchemaRoles(await createTestDatabase('webhooks_upgrade'), 'webhooks');
  owner = openDatabase({ url: roles.urlOf(roles.owner) });
});

after(async () => {
  await owner.close();
  await roles.drop();
});

/** What a replica of the previous release writes: no organization anywhere. */
async function previousRelease(knex: Knex, groupId: number) {
  const subscription = randomUUID();
  const event = randomUUID();
  await knex('subscriptions').insert({
    id: subscription,
    group_id: groupId,
    url: `http://127.0.0.1:9/${groupId}`,
    events: ['drive.deleted'],
    secret: 'plain:x',
  });
  await knex('events').insert({
    id: event,
    event_type: 'drive.deleted',
    group_id: groupId,
    occurred_at: new Date(),
    data: {},
  });
  await knex('deliveries').insert({ subscription_id: subscription, event_id: event, next_attempt_at: new Date() });
  return { subscription, event };
}

const codeOf = (work: Promise<unknown>) =>
  work.then(
    () => undefined,
    (err: { code?: string }) => err.code,
  );

test('expand keeps the previous release writing (into organization 1); contract isolates; both roll back', async () => {
  const { knex } = owner;
  // The schema before organizations, with data.
  await knex.migrate.up();
  await knex.migrate.up();
  const before = await previousRelease(knex, 7);

  assert.deepEqual((await owner.migrate({ phase: 'expand' })).applied, [
    '20261126100000_organizations.js',
    '20261129000000_erasure.js',
    '20261129010000_paused_organizations.js',
  ]);
  const organizationsOf = async (table: string) =>
    (await knex(table).distinct('organization_id')).map((r: { organization_id: string }) => r.organization_id);
  for (const table of ['subscriptions', 'events', 'deliveries'])
    assert.deepEqual(await organizationsOf(table), ['1'], table);
  // An old replica still writes during the rollout, and a new one reads the same rows inside organization 1.
  const during = await previousRelease(knex, 8);
  const repo = new WebhooksRepository(knex);
  assert.equal((await repo.inOrganization(1, (w) => w.listSubscriptions(8)))[0]?.id, during.subscription);
  // New rows are held to the composite keys at once: no delivery of an event to another organization's subscriber.
  const foreign = randomUUID();
  await knex('events').insert({
    id: foreign,
    organization_id: 2,
    event_type: 'drive.deleted',
    occurred_at: new Date(),
    data: {},
  });
  assert.equal(
    await codeOf(
      knex('deliveries').insert({ subscription_id: before.subscription, event_id: foreign, organization_id: 1 }),
    ),
    '23503',
  );

  assert.deepEqual((await owner.migrate({ phase: 'contract' })).applied, ['20261126200000_organization_isolation.js']);
  const { rows: constraints } = await knex.raw<{ rows: { name: string; valid: boolean }[] }>(
    `SELECT conname AS name, convalidated AS valid FROM pg_constraint
      WHERE connamespace = 'webhooks'::regnamespace AND contype IN ('c', 'f', 'u') ORDER BY conname`,
  );
  assert.ok(
    constraints.every((c) => c.valid),
    JSON.stringify(constraints),
  );
  const names = constraints.map((c) => c.name);
  for (const replaced of [
    'deliveries_subscription_id_fkey',
    'deliveries_event_id_fkey',
    'subscriptions_group_id_url_key',
  ])
    assert.equal(names.includes(replaced), false, replaced);
  // Row-level security: without a declared organization nothing is seen, nor written; inside one, its rows.
  assert.deepEqual(await knex('subscriptions').select('id'), []);
  assert.equal(await codeOf(previousRelease(knex, 9)), '42501');
  const seen = await inOrganization(knex, 1, (trx) => trx('subscriptions').orderBy('group_id').pluck('id'));
  assert.deepEqual(seen, [before.subscription, during.subscription]);
  assert.deepEqual(await inOrganization(knex, 2, (trx) => trx('events').pluck('id')), [foreign]);

  // Back: contract, then expand, down to the schema before organizations with its rows kept.
  await knex.migrate.rollback({
    directory: path.join(__dirname, 'migrations', 'contract'),
    tableName: 'knex_migrations_contract',
  });
  assert.deepEqual(await knex('subscriptions').orderBy('group_id').pluck('id'), [
    before.subscription,
    during.subscription,
  ]);
  await knex.migrate.rollback();
  const { rows: columns } = await knex.raw<{ rows: unknown[] }>(
    `SELECT 1 FROM information_schema.columns WHERE table_schema = 'webhooks' AND column_name = 'organization_id'`,
  );
  assert.deepEqual(columns, []);
  await previousRelease(knex, 10);
});
