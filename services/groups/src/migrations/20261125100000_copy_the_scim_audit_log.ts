import { copyScimAuditLog } from '@mileage/runtime/audit';
import type { Knex } from 'knex';

// The audit entries the SCIM service logged before the owners kept their own (scim.audit_log) belong in this
// schema's provisioning_audit. 20261123100000 copied them only when scim.group_attributes was still there, which the
// SCIM hand-over had dropped when empty: this copies whichever of them the trail lacks. Afterwards the scim schema
// holds nothing of use, and the database administrator drops it (docs/operations.md, "Upgrading").
export async function up(knex: Knex): Promise<void> {
  await copyScimAuditLog(knex, 'Group', { table: 'provisioning_audit', column: 'team_id', type: 'bigint' });
}

// Entries of the trail cannot be told apart from the ones the owner wrote before this ran (nor deleted: append-only).
export async function down(): Promise<void> {}
