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
  // The operator's record of an offboarding: the suspension from `requested_at` (a cancel deletes the row
  // before the erasure starts), then the erasure receipt. It outlives the organization's row and holds ids, times and counts only.
  await knex.raw(`CREATE TABLE organization_offboardings (
    organization_id bigint PRIMARY KEY,
    requested_at timestamptz NOT NULL DEFAULT now(),
    erase_after timestamptz NOT NULL,
    erasure_started_at timestamptz,
    erasure_finished_at timestamptz,
    backups_hold_until timestamptz,
    erased_rows jsonb
  )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS ??', [ERASED_ROWS_TABLE]);
  for (const statement of strictAppendOnlyStatements('provisioning_audit')) await knex.raw(statement);
  await knex.raw('DROP TABLE IF EXISTS organization_offboardings');
}
