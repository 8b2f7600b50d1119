import type { Knex } from 'knex';
import {
  allowErasureStatements,
  CREATE_ERASED_ROWS_TABLE,
  ERASED_ROWS_TABLE,
  strictAppendOnlyStatements,
} from '@mileage/runtime/database';

// Offboarding with erasure (docs/operations.md, "Data lifecycle"): what an erasure deleted here, counted per table.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(CREATE_ERASED_ROWS_TABLE);
  // The provisioning trail stays append-only, except for the rows of the organization an erasure declares.
  for (const statement of allowErasureStatements('provisioning_audit')) await knex.raw(statement);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS ??', [ERASED_ROWS_TABLE]);
  for (const statement of strictAppendOnlyStatements('provisioning_audit')) await knex.raw(statement);
}
