import {
  DECLARED_ORGANIZATION_DEFAULT,
  dropOrganizationIsolationStatements,
  organizationIsolationStatements,
} from '@mileage/runtime/database';
import { outboxOrganizationContractStatements } from '@mileage/runtime/outbox';
import type { Knex } from 'knex';

const TENANT_TABLES = ['drives', 'drive_reports', 'drive_tombstones', 'report_tombstones'];

// Organizations (contract: runs once no replica of the previous release serves). A drive, a report and an event take
// the organization their transaction declared, and a transaction sees only its organization's drives, reports and
// tombstones (the housekeeping's purge, work across organizations, goes through acrossOrganizations). Review comments
// are reached only through their report.
export async function up(knex: Knex): Promise<void> {
  for (const table of TENANT_TABLES) {
    await knex.raw(`ALTER TABLE ${table} ALTER COLUMN organization_id SET DEFAULT ${DECLARED_ORGANIZATION_DEFAULT}`);
    for (const statement of organizationIsolationStatements(table)) await knex.raw(statement);
  }
  for (const statement of outboxOrganizationContractStatements()) await knex.raw(statement);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE outbox ALTER COLUMN organization_id SET DEFAULT 1`);
  for (const table of TENANT_TABLES) {
    for (const statement of dropOrganizationIsolationStatements(table)) await knex.raw(statement);
    await knex.raw(`ALTER TABLE ${table} ALTER COLUMN organization_id SET DEFAULT 1`);
  }
}
