import {
  DECLARED_ORGANIZATION_DEFAULT,
  dropOrganizationIsolationStatements,
  organizationIsolationStatements,
} from '@mileage/runtime/database';
import { outboxOrganizationContractStatements } from '@mileage/runtime/outbox';
import type { Knex } from 'knex';

// Organizations, contract phase (after the rollout: no replica of the release before organizations serves any more).
// A row takes the organization its transaction declared (none declared: the insert fails instead of landing in
// organization 1), the global unique indexes give way to the per-organization ones of the expand phase, and
// row-level security shows every transaction only its own organization's rows.
const ISOLATED_TABLES = ['users', 'user_email_values', 'scim_tokens', 'provisioning_audit'];

export async function up(knex: Knex): Promise<void> {
  // First what only reads the tables (the expand phase's constraints, checked against the rows from before them), so
  // that the exclusive locks of the catalog changes below are held for an instant, not for these scans.
  for (const [table, constraint] of [
    ['users', 'users_organization_fkey'],
    ['users', 'users_lookup_keys_check'],
    ['provisioning_audit', 'provisioning_audit_organization_fkey'],
    ['provisioning_audit', 'provisioning_audit_resource_check'],
    ['provisioning_audit', 'provisioning_audit_operation_check'],
  ] as const)
    await knex.raw('ALTER TABLE ?? VALIDATE CONSTRAINT ??', [table, constraint]);
  for (const statement of [
    `ALTER TABLE users ALTER COLUMN organization_id SET DEFAULT ${DECLARED_ORGANIZATION_DEFAULT}`,
    `ALTER TABLE provisioning_audit ALTER COLUMN organization_id SET DEFAULT ${DECLARED_ORGANIZATION_DEFAULT}`,
    ...outboxOrganizationContractStatements(),
    `DROP INDEX users_user_name_key`,
    `DROP INDEX users_external_id_idx`,
    `DROP INDEX users_display_name_idx`,
    // Replaced by user_email_values (a lookup the policies let use an index).
    `DROP INDEX users_email_values_idx`,
    ...ISOLATED_TABLES.flatMap(organizationIsolationStatements),
  ])
    await knex.raw(statement);
}

export async function down(knex: Knex): Promise<void> {
  for (const statement of [
    ...ISOLATED_TABLES.flatMap(dropOrganizationIsolationStatements),
    // Fails when two organizations have a live user of the same userName: the global rule cannot come back then.
    `CREATE UNIQUE INDEX users_user_name_key ON users (lower(user_name)) WHERE deleted_at IS NULL`,
    `CREATE INDEX users_external_id_idx ON users (external_id) WHERE external_id IS NOT NULL`,
    `CREATE INDEX users_display_name_idx ON users (lower(display_name)) WHERE deleted_at IS NULL`,
    `CREATE INDEX users_email_values_idx ON users
       USING gin ((lower(jsonb_path_query_array(emails, '$[*].value')::text)::jsonb) jsonb_path_ops)
       WHERE deleted_at IS NULL`,
    `ALTER TABLE outbox ALTER COLUMN organization_id SET DEFAULT 1`,
    `ALTER TABLE provisioning_audit ALTER COLUMN organization_id SET DEFAULT 1`,
    `ALTER TABLE users ALTER COLUMN organization_id SET DEFAULT 1`,
  ])
    await knex.raw(statement);
}
