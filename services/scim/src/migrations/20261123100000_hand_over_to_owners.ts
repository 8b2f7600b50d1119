import type { Knex } from 'knex';

// Every SCIM attribute and the audit entry of each provisioning change now live with the resource's owner (Users,
// Groups), written in the owner's transaction; the write journal that kept this schema consistent with theirs is
// gone (docs/architecture.md, "One owner per fact"). This migration hands the data over: the owners' migrations of
// the same release read (and empty) these tables, so their roles are given exactly that access here, and must run
// after this one. Tables that hold nothing to hand over are dropped; scim.audit_log stays as the read-only record
// of the changes made before the upgrade (the owners copy it into their own provisioning_audit).
export async function up(knex: Knex): Promise<void> {
  // An unsettled intent is a write whose audit entry may still be missing: the SCIM service of the previous
  // release settles it within its recovery threshold (30 s by default) while it keeps running.
  const [pending] = (await knex('pending_writes').count('* as count')) as { count: string }[];
  if (Number(pending!.count) > 0) {
    throw new Error(
      `${pending!.count} provisioning write(s) are not settled yet; the running SCIM service settles them within ` +
        'SCIM_RECOVERY_AFTER_MS: retry the migration then',
    );
  }
  await knex.raw('DROP TABLE pending_writes');

  const handOver = async (table: string, owners: string[], privileges: string) => {
    const [rows] = (await knex(table).count('* as count')) as { count: string }[];
    if (Number(rows!.count) === 0) {
      await knex.raw('DROP TABLE ??', [table]);
      return;
    }
    for (const schema of owners) {
      const owner = (
        await knex.raw<{ rows: { rolname: string; mine: boolean }[] }>(
          `SELECT r.rolname, r.rolname = current_user AS mine
           FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner WHERE n.nspname = ?`,
          [schema],
        )
      ).rows[0];
      if (!owner || owner.mine) continue;
      await knex.raw('GRANT USAGE ON SCHEMA scim TO ??', [owner.rolname]);
      await knex.raw(`GRANT ${privileges} ON ?? TO ??`, [table, owner.rolname]);
    }
  };
  await handOver('user_attributes', ['users'], 'SELECT, DELETE');
  await handOver('group_attributes', ['groups'], 'SELECT, DELETE');
  const [audited] = (await knex('audit_log').count('* as count')) as { count: string }[];
  if (Number(audited!.count) === 0) {
    await knex.raw('DROP TABLE audit_log');
    await knex.raw('DROP FUNCTION audit_log_is_append_only');
  } else await handOver('audit_log', ['users', 'groups'], 'SELECT');
}

export async function down(): Promise<void> {
  throw new Error('The hand-over of SCIM attributes to their owners cannot be undone by a migration');
}
