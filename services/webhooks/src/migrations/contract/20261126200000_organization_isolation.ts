import {
  DECLARED_ORGANIZATION_DEFAULT,
  dropOrganizationIsolationStatements,
  organizationIsolationStatements,
} from '@mileage/runtime/database';
import type { Knex } from 'knex';

// Organizations, contract phase (after the rollout: no replica that declares no organization serves any more). Rows
// now take the organization their transaction declared (none declared: the insert fails instead of landing in
// organization 1), the expand phase's constraints are validated, the keys they replace are dropped, and row-level
// security shows a transaction only its organization's rows.
const TENANT_TABLES = ['subscriptions', 'events', 'deliveries'];

export async function up(knex: Knex): Promise<void> {
  for (const table of TENANT_TABLES) {
    await knex.raw(`ALTER TABLE ${table} ALTER COLUMN organization_id SET DEFAULT ${DECLARED_ORGANIZATION_DEFAULT}`);
    await knex.raw(`ALTER TABLE ${table} VALIDATE CONSTRAINT ${table}_organization_id_check`);
  }
  await knex.raw('ALTER TABLE deliveries VALIDATE CONSTRAINT deliveries_subscription_organization_fkey');
  await knex.raw('ALTER TABLE deliveries VALIDATE CONSTRAINT deliveries_event_organization_fkey');
  // The composite keys take the place of the single-column ones; the URL is unique per group within an organization.
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT deliveries_subscription_id_fkey');
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_id_fkey');
  await knex.raw('ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_group_id_url_key');
  for (const table of TENANT_TABLES)
    for (const statement of organizationIsolationStatements(table)) await knex.raw(statement);
}

export async function down(knex: Knex): Promise<void> {
  for (const table of TENANT_TABLES)
    for (const statement of dropOrganizationIsolationStatements(table)) await knex.raw(statement);
  await knex.raw('ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_group_id_url_key UNIQUE (group_id, url)');
  await knex.raw(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_id_fkey
    FOREIGN KEY (event_id) REFERENCES events (id) ON DELETE CASCADE`);
  await knex.raw(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_subscription_id_fkey
    FOREIGN KEY (subscription_id) REFERENCES subscriptions (id) ON DELETE CASCADE`);
  for (const table of TENANT_TABLES) await knex.raw(`ALTER TABLE ${table} ALTER COLUMN organization_id SET DEFAULT 1`);
}
