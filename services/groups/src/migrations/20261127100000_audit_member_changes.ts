import type { Knex } from 'knex';

// A group's change by difference (PatchGroup) records the members it added and removed (empty: none), not the whole
// list twice; NULL in the entries of other writes.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE provisioning_audit ADD COLUMN members_added text[], ADD COLUMN members_removed text[]`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE provisioning_audit DROP COLUMN members_added, DROP COLUMN members_removed`);
}
