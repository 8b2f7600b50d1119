import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // The owner version an unsettled write produces, so that readers show its SCIM-side state with that version.
  await knex.raw('ALTER TABLE pending_writes ADD COLUMN target_version bigint');
  // One write in flight per resource: requests take this slot before they read (see WriteJournal).
  await knex.raw(
    `CREATE UNIQUE INDEX pending_writes_one_per_resource ON pending_writes (resource_type, resource_id) WHERE resource_id IS NOT NULL`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX pending_writes_one_per_resource');
  await knex.raw('ALTER TABLE pending_writes DROP COLUMN target_version');
}
