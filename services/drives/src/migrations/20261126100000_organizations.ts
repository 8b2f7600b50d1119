import { foreignKeyStatements } from '@mileage/runtime/database';
import { outboxOrganizationExpandStatements } from '@mileage/runtime/outbox';
import type { Knex } from 'knex';

const TOMBSTONE_TABLES = ['drive_tombstones', 'report_tombstones'];

// Organizations (expand: runs before the rollout, while the previous release still serves). A drive belongs to its
// driver's organization, its report and its tombstones to the same one; what exists, and whatever a replica of the previous release
// writes during the rollout, lands in organization 1, the default organization of an upgraded installation. The
// contract phase (migrations/contract) makes the defaults strict and isolates the organizations.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE drives ADD COLUMN organization_id bigint NOT NULL DEFAULT 1 CHECK (organization_id > 0)`);
  await knex.raw(`ALTER TABLE drives ADD CONSTRAINT drives_id_organization_key UNIQUE (id, organization_id)`);
  // A report is of its drive's organization: the database refuses another.
  await knex.raw(`ALTER TABLE drive_reports ADD COLUMN organization_id bigint NOT NULL DEFAULT 1`);
  for (const statement of foreignKeyStatements(
    'drive_reports',
    'drive_reports_drive_organization_fkey',
    'FOREIGN KEY (drive_id, organization_id) REFERENCES drives (id, organization_id)',
  ))
    await knex.raw(statement);
  // The change feed's tombstones: of the drive's organization (the drive itself is gone).
  for (const table of TOMBSTONE_TABLES)
    await knex.raw(`ALTER TABLE ${table} ADD COLUMN organization_id bigint NOT NULL DEFAULT 1`);
  for (const statement of outboxOrganizationExpandStatements()) await knex.raw(statement);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE outbox DROP COLUMN organization_id`);
  for (const table of TOMBSTONE_TABLES) await knex.raw(`ALTER TABLE ${table} DROP COLUMN organization_id`);
  await knex.raw(`ALTER TABLE drive_reports DROP COLUMN organization_id`);
  await knex.raw(`ALTER TABLE drives DROP COLUMN organization_id`);
}
