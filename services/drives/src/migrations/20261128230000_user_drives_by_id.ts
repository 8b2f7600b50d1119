import type { Knex } from 'knex';

// A person's own copy (ExportUserDrives) reads the user's drives by id, page by page: an index range scan per page.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX drives_user_id_idx ON drives (user_id, id)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX drives_user_id_idx`);
}
