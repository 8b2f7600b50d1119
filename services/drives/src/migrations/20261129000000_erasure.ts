import type { Knex } from 'knex';
import { CREATE_ERASED_ROWS_TABLE, ERASED_ROWS_TABLE } from '@mileage/runtime/database';

// Offboarding with erasure (docs/operations.md, "Data lifecycle"): what an erasure deleted here, counted per table.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(CREATE_ERASED_ROWS_TABLE);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS ??', [ERASED_ROWS_TABLE]);
}
