import { createProvisioningAuditTable, readableLegacyTable } from '@mileage/runtime/audit';
import type { Knex } from 'knex';

// Every SCIM attribute of a user and the audit entry of each provisioning change now live here, written in one
// transaction with the user's version. Before, the SCIM service kept the attributes the platform does not model
// (scim.user_attributes) and the audit log (scim.audit_log) and reconciled them with this schema through a write
// journal; this migration takes that data over (docs/architecture.md, "One owner per fact").
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE users ADD COLUMN scim_attributes jsonb
      CHECK (scim_attributes IS NULL OR jsonb_typeof(scim_attributes) = 'object')
  `);
  await createProvisioningAuditTable(knex, { table: 'provisioning_audit', column: 'user_id', type: 'char(10)' });
  // Write ids and their records served the SCIM service's journal, which is gone.
  await knex.raw('DROP TABLE write_requests');

  // Take over what the SCIM service kept, when there is any: its hand-over migration of the same release (gone since
  // SCIM has no database) let this schema's owner read (and empty) those tables. The audit entries are copied only
  // when the attribute table was kept; 20261125100000 copies the ones this skipped.
  if (!(await readableLegacyTable(knex, 'scim', 'user_attributes'))) return;
  await knex.raw(`
    UPDATE users SET scim_attributes = a.attributes
      FROM scim.user_attributes a
     WHERE users.id = a.user_id AND a.attributes <> '{}'::jsonb
  `);
  await knex.raw(`DELETE FROM scim.user_attributes`);
  if (!(await readableLegacyTable(knex, 'scim', 'audit_log'))) return;
  await knex.raw(`
    INSERT INTO provisioning_audit (occurred_at, actor, operation, user_id, request_id, before, after)
    SELECT occurred_at, actor, operation, resource_id, request_id, before, after
      FROM scim.audit_log WHERE resource_type = 'User' ORDER BY id
  `);
}

// The data taken over from the SCIM schema has no other home any more (its tables were emptied or dropped).
export async function down(): Promise<void> {
  throw new Error("The takeover of the SCIM service's data by its owners cannot be undone by a migration");
}
