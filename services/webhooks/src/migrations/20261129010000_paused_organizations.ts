import type { Knex } from 'knex';

// The organizations whose deliveries are paused (an offboarding's suspension): the worker claims none of theirs.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE paused_organizations (
    organization_id bigint PRIMARY KEY,
    paused_at timestamptz NOT NULL DEFAULT now()
  )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS paused_organizations');
}
