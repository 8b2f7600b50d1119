import type { Knex } from 'knex';

// Organizations, expand phase (runs while replicas of the previous release still serve): every tenant table gains its
// organization, 1 (the default organization of an upgraded installation) for every existing row and for every row an
// old replica inserts. Constraints are added NOT VALID (no scan under a lock that blocks reads; new rows are checked
// at once) and validated by the contract phase.
const TENANT_TABLES = ['subscriptions', 'events', 'deliveries'];

export async function up(knex: Knex): Promise<void> {
  for (const table of TENANT_TABLES) {
    await knex.raw(`ALTER TABLE ${table} ADD COLUMN organization_id bigint NOT NULL DEFAULT 1`);
    await knex.raw(
      `ALTER TABLE ${table} ADD CONSTRAINT ${table}_organization_id_check CHECK (organization_id > 0) NOT VALID`,
    );
  }
  // The targets of the composite keys below.
  await knex.raw(
    'ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_organization_key UNIQUE (id, organization_id)',
  );
  await knex.raw('ALTER TABLE events ADD CONSTRAINT events_organization_key UNIQUE (id, organization_id)');
  // A delivery's organization is its subscription's and its event's: the database refuses any delivery that would
  // carry an event of one organization to a subscriber of another, whichever code path writes it.
  await knex.raw(`
    ALTER TABLE deliveries ADD CONSTRAINT deliveries_subscription_organization_fkey
      FOREIGN KEY (subscription_id, organization_id) REFERENCES subscriptions (id, organization_id)
      ON DELETE CASCADE NOT VALID`);
  await knex.raw(`
    ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_organization_fkey
      FOREIGN KEY (event_id, organization_id) REFERENCES events (id, organization_id)
      ON DELETE CASCADE NOT VALID`);
  // A group's webhooks are looked up inside the organization; the URL is unique per group within it.
  await knex.raw(
    'CREATE UNIQUE INDEX subscriptions_organization_group_url_key ON subscriptions (organization_id, group_id, url)',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX subscriptions_organization_group_url_key');
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_organization_fkey');
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT deliveries_subscription_organization_fkey');
  await knex.raw('ALTER TABLE events DROP CONSTRAINT events_organization_key');
  await knex.raw('ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_organization_key');
  for (const table of TENANT_TABLES) await knex.raw(`ALTER TABLE ${table} DROP COLUMN organization_id`);
}
