import { createProvisioningAuditTable, readableLegacyTable } from '@mileage/runtime/audit';
import type { Knex } from 'knex';

// A group's externalId and the audit entry of each provisioning change now live here, written in one transaction
// with the group's version. Before, the SCIM service kept them (scim.group_attributes, scim.audit_log) and
// reconciled them with this schema through a write journal; this migration takes that data over
// (docs/architecture.md, "One owner per fact").
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE teams ADD COLUMN external_id text CHECK (length(external_id) <= 256)`);
  await createProvisioningAuditTable(knex, { table: 'provisioning_audit', column: 'team_id', type: 'bigint' });
  // Write ids and their records served the SCIM service's journal, which is gone.
  await knex.raw('DROP TABLE write_requests');

  // Take over what the SCIM service kept, when there is any: its hand-over migration of the same release (gone since
  // SCIM has no database) let this schema's owner read (and empty) those tables. The audit entries are copied only
  // when the attribute table was kept; 20261125100000 copies the ones this skipped.
  if (!(await readableLegacyTable(knex, 'scim', 'group_attributes'))) return;
  await knex.raw(`
    UPDATE teams SET external_id = a.external_id
      FROM scim.group_attributes a
     WHERE teams.id = a.group_id AND a.external_id IS NOT NULL
  `);
  await knex.raw(`DELETE FROM scim.group_attributes`);
  if (!(await readableLegacyTable(knex, 'scim', 'audit_log'))) return;
  await knex.raw(`
    INSERT INTO provisioning_audit (occurred_at, actor, operation, team_id, request_id, before, after)
    SELECT occurred_at, actor, operation, resource_id::bigint, request_id, before, after
      FROM scim.audit_log WHERE resource_type = 'Group' ORDER BY id
  `);
}

// The data taken over from the SCIM schema has no other home any more (its tables were emptied or dropped).
export async function down(): Promise<void> {
  throw new Error("The takeover of the SCIM service's data by its owners cannot be undone by a migration");
}
