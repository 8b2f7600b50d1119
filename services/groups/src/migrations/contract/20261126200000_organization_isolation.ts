import {
  DECLARED_ORGANIZATION_DEFAULT,
  dropOrganizationIsolationStatements,
  foreignKeyStatements,
  organizationIsolationStatements,
} from '@mileage/runtime/database';
import type { Knex } from 'knex';

const TENANT_TABLES = ['teams', 'team_members', 'member_organizations', 'provisioning_audit'];

// Organizations (contract: runs once no replica of the previous release serves). A row takes the organization its
// transaction declared, a transaction that declared none sees and writes nothing, and a membership's user must be of
// its group's organization.
export async function up(knex: Knex): Promise<void> {
  for (const table of TENANT_TABLES)
    await knex.raw(`ALTER TABLE ${table} ALTER COLUMN organization_id SET DEFAULT ${DECLARED_ORGANIZATION_DEFAULT}`);
  // The members the previous release added during the rollout (it recorded no organization for them: 1, as theirs).
  await knex.raw(`
    INSERT INTO member_organizations (user_id, organization_id)
    SELECT DISTINCT user_id, organization_id FROM team_members ON CONFLICT DO NOTHING
  `);
  // Not in the expand phase: the previous release adds members without recording their organization.
  for (const statement of foreignKeyStatements(
    'team_members',
    'team_members_user_organization_fkey',
    'FOREIGN KEY (user_id, organization_id) REFERENCES member_organizations (user_id, organization_id)',
  ))
    await knex.raw(statement);
  for (const table of TENANT_TABLES)
    for (const statement of organizationIsolationStatements(table)) await knex.raw(statement);
}

export async function down(knex: Knex): Promise<void> {
  for (const table of TENANT_TABLES)
    for (const statement of dropOrganizationIsolationStatements(table)) await knex.raw(statement);
  await knex.raw(`ALTER TABLE team_members DROP CONSTRAINT team_members_user_organization_fkey`);
  await knex.raw(`ALTER TABLE member_organizations ALTER COLUMN organization_id DROP DEFAULT`);
  for (const table of ['teams', 'team_members', 'provisioning_audit'])
    await knex.raw(`ALTER TABLE ${table} ALTER COLUMN organization_id SET DEFAULT 1`);
}
