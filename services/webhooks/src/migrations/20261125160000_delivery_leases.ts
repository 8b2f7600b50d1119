import type { Knex } from 'knex';

// While an attempt runs, until when its worker holds it: the in-flight attempts a subscription has (claims cap them).
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries ADD COLUMN leased_until timestamptz');
  await knex.raw('CREATE INDEX deliveries_leased_idx ON deliveries (subscription_id) WHERE leased_until IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries DROP COLUMN leased_until');
}
