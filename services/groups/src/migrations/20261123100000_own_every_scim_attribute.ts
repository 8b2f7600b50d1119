import type { Knex } from 'knex';

// A group's externalId and the audit entry of each provisioning change now live here, written in one transaction
// with the group's version. Before, the SCIM service kept them (scim.group_attributes, scim.audit_log) and
// reconciled them with this schema through a write journal; this migration takes that data over
// (docs/architecture.md, "One owner per fact").
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE teams ADD COLUMN external_id text CHECK (length(external_id) <= 256)`);
  // Every provisioning change that happened, once: who, what, before / after, when. Append-only.
  await knex.raw(`
    CREATE TABLE provisioning_audit (
      id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      occurred_at timestamptz NOT NULL DEFAULT now(),
      actor       text        NOT NULL,
      operation   text        NOT NULL CHECK (operation IN ('create', 'replace', 'patch', 'delete')),
      team_id     bigint      NOT NULL,
      -- The version the change produced; null for entries taken over from the SCIM service.
      version     bigint,
      request_id  text,
      before      jsonb,
      after       jsonb
    )
  `);
  await knex.raw(`CREATE INDEX provisioning_audit_team_idx ON provisioning_audit (team_id, id)`);
  await knex.raw(`
    CREATE FUNCTION provisioning_audit_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'provisioning_audit is append-only';
    END $$
  `);
  await knex.raw(`
    CREATE TRIGGER provisioning_audit_append_only BEFORE UPDATE OR DELETE ON provisioning_audit
      FOR EACH ROW EXECUTE FUNCTION provisioning_audit_is_append_only()
  `);
  await knex.raw(`
    CREATE TRIGGER provisioning_audit_no_truncate BEFORE TRUNCATE ON provisioning_audit
      FOR EACH STATEMENT EXECUTE FUNCTION provisioning_audit_is_append_only()
  `);
  // Write ids and their records served the SCIM service's journal, which is gone.
  await knex.raw('DROP TABLE write_requests');

  // Take over what the SCIM service kept, when there is any. Its migration 20261123100000 lets this schema's
  // owner read (and empty) those tables; it must have run first (the chart orders the jobs, npm start too).
  if (!(await legacyTable(knex, 'group_attributes'))) return;
  await knex.raw(`
    UPDATE teams SET external_id = a.external_id
      FROM scim.group_attributes a
     WHERE teams.id = a.group_id AND a.external_id IS NOT NULL
  `);
  await knex.raw(`DELETE FROM scim.group_attributes`);
  if (!(await legacyTable(knex, 'audit_log'))) return;
  await knex.raw(`
    INSERT INTO provisioning_audit (occurred_at, actor, operation, team_id, request_id, before, after)
    SELECT occurred_at, actor, operation, resource_id::bigint, request_id, before, after
      FROM scim.audit_log WHERE resource_type = 'Group' ORDER BY id
  `);
}

/** Does scim.<table> exist? Throws when it does but this role may not read it yet (the SCIM migration grants it). */
async function legacyTable(knex: Knex, table: string): Promise<boolean> {
  const { rows } = await knex.raw<{ rows: { readable: boolean }[] }>(
    `SELECT has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT') AS readable
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'scim' AND c.relname = ?`,
    [table],
  );
  if (rows.length === 0) return false;
  if (!rows[0]!.readable) {
    throw new Error(
      `scim.${table} holds data this service takes over, but this role may not read it yet: ` +
        'apply the SCIM service migrations first (they grant the access), then retry',
    );
  }
  return true;
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE write_requests (
      write_id    uuid        PRIMARY KEY,
      outcome     text        NOT NULL CHECK (outcome IN ('applied', 'abandoned')),
      team_id     bigint,
      recorded_at timestamptz NOT NULL DEFAULT now()
    )
  `);
  await knex.raw('DROP TABLE provisioning_audit');
  await knex.raw('DROP FUNCTION provisioning_audit_is_append_only');
  await knex.raw('ALTER TABLE teams DROP COLUMN external_id');
}
