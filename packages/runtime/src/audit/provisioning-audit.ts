import type { Knex } from 'knex';
import { errors } from '../grpc/errors';

/**
 * An owner's trail of provisioning changes as its migrations name it: the table, the column holding the changed
 * resource's id (`column`) and that column's SQL type (`type`). The trail's other columns (who, what, before / after,
 * when) are the same in every owner, so they are written here once; the owner names its own parts.
 */
export interface ProvisioningAuditTable {
  table: string;
  column: string;
  type: string;
}

/**
 * Creates an owner's provisioning audit trail: indexed by resource (`<table>_<column without _id>_idx`), append-only
 * (makeAppendOnly).
 */
export async function createProvisioningAuditTable(knex: Knex, trail: ProvisioningAuditTable): Promise<void> {
  // Every provisioning change that happened, once: who, what, before / after, when.
  await knex.raw(
    `
    CREATE TABLE ?? (
      id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      occurred_at timestamptz NOT NULL DEFAULT now(),
      actor       text        NOT NULL,
      operation   text        NOT NULL CHECK (operation IN ('create', 'replace', 'patch', 'delete')),
      ??          ${trail.type} NOT NULL,
      -- The version the change produced; null for entries taken over from the SCIM service.
      version     bigint,
      request_id  text,
      before      jsonb,
      after       jsonb
    )
  `,
    [trail.table, trail.column],
  );
  await knex.raw('CREATE INDEX ?? ON ?? (??, id)', [
    `${trail.table}_${trail.column.replace(/_id$/, '')}_idx`,
    trail.table,
    trail.column,
  ]);
  await makeAppendOnly(knex, trail.table);
}

/**
 * Makes a table append-only even for roles granted UPDATE or DELETE: the function `<table>_is_append_only` raises,
 * from the triggers `<table>_append_only` (each updated or deleted row) and `<table>_no_truncate`.
 */
async function makeAppendOnly(knex: Knex, table: string): Promise<void> {
  const raise = `${table}_is_append_only`;
  await knex.raw(
    `CREATE FUNCTION ??() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION '${table} is append-only';
    END $$`,
    [raise],
  );
  await knex.raw('CREATE TRIGGER ?? BEFORE UPDATE OR DELETE ON ?? FOR EACH ROW EXECUTE FUNCTION ??()', [
    `${table}_append_only`,
    table,
    raise,
  ]);
  await knex.raw('CREATE TRIGGER ?? BEFORE TRUNCATE ON ?? FOR EACH STATEMENT EXECUTE FUNCTION ??()', [
    `${table}_no_truncate`,
    table,
    raise,
  ]);
}

/**
 * Whether `<schema>.<table>` exists, for a migration that takes data over from another service's schema. Throws when
 * it exists but this role may not read it: the data would be skipped silently otherwise.
 */
export async function readableLegacyTable(knex: Knex, schema: string, table: string): Promise<boolean> {
  const { rows } = await knex.raw<{ rows: { readable: boolean }[] }>(
    `SELECT has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT') AS readable
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ? AND c.relname = ?`,
    [schema, table],
  );
  if (rows.length === 0) return false;
  if (!rows[0]!.readable) {
    throw new Error(
      `${schema}.${table} holds data this service takes over, but this role may not read it: upgrade through the ` +
        `release whose ${schema} migrations grant that access (docs/operations.md, "Upgrading"), then retry`,
    );
  }
  return true;
}

/**
 * Copies into an owner's trail the entries of the SCIM service's former audit log (`scim.audit_log`, the record of the
 * changes made before the owners kept their own) about `resourceType` that the trail lacks. An entry is the same entry
 * when its time, resource, operation, actor and request id are (the log was append-only, so they never change): run
 * again, or after an earlier copy, it adds nothing. Returns how many it copied; 0 when there is no such log.
 */
export async function copyScimAuditLog(
  knex: Knex,
  resourceType: 'User' | 'Group',
  trail: ProvisioningAuditTable,
): Promise<number> {
  if (!(await readableLegacyTable(knex, 'scim', 'audit_log'))) return 0;
  const id = `a.resource_id::${trail.type}`;
  const { rowCount } = await knex.raw<{ rowCount: number }>(
    `
    INSERT INTO ?? (occurred_at, actor, operation, ??, request_id, before, after)
    SELECT a.occurred_at, a.actor, a.operation, ${id}, a.request_id, a.before, a.after
      FROM scim.audit_log a
     WHERE a.resource_type = ?
       AND NOT EXISTS (
         SELECT 1 FROM ?? t
          WHERE t.?? = ${id} AND t.occurred_at = a.occurred_at AND t.operation = a.operation
            AND t.actor = a.actor AND t.request_id IS NOT DISTINCT FROM a.request_id)
     ORDER BY a.id
  `,
    [trail.table, trail.column, resourceType, trail.table, trail.column],
  );
  return rowCount;
}

/** The unique index that takes each attestation nonce at most once (`addAttestationNonce`). */
export const ATTESTATION_NONCE_INDEX = 'provisioning_audit_attestation_nonce_key';

/**
 * The column a write's attestation nonce is recorded in, unique: a SCIM write replayed to another SCIM replica within
 * its attestation's window finds its nonce taken, in the write's own transaction, and nothing is written.
 */
export async function addAttestationNonce(knex: Knex, table: string): Promise<void> {
  await knex.raw('ALTER TABLE ?? ADD COLUMN IF NOT EXISTS attestation_nonce text', [table]);
  await knex.raw('CREATE UNIQUE INDEX IF NOT EXISTS ?? ON ?? (attestation_nonce)', [ATTESTATION_NONCE_INDEX, table]);
}

export async function dropAttestationNonce(knex: Knex, table: string): Promise<void> {
  await knex.raw('ALTER TABLE ?? DROP COLUMN IF EXISTS attestation_nonce', [table]);
}

/** The refusal of a write whose attestation nonce an earlier write took; other errors pass through unchanged. */
export function refuseReplayedAttestation(err: unknown): never {
  const e = err as { code?: unknown; constraint?: unknown };
  if (e?.code === '23505' && e.constraint === ATTESTATION_NONCE_INDEX)
    throw errors.alreadyExists('this attestation was already used for a write', 'ATTESTATION_REPLAYED');
  throw err;
}
