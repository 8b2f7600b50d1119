// Erasing one organization from a service's schema (CONTRACT §8, docs/operations.md "Data lifecycle"): each owner
// erases its own tables, in batches of at most ERASURE_BATCH_ROWS rows a transaction, each batch inside the
// organization (row-level security) and filtered by it, its count recorded in `erased_rows` in the same transaction.
// Progress is the data itself (what is left), so a run killed at any point resumes by running again.
import type { Knex } from 'knex';
import { isOrganizationId, requireOrganization } from '../grpc/organization-metadata';
import { inOrganization } from './tenancy';

/** The most rows one erasure transaction deletes. */
export const ERASURE_BATCH_ROWS = 1000;
/** The per-schema record of what an erasure deleted: counts per table, no personal data. */
export const ERASED_ROWS_TABLE = 'erased_rows';
/**
 * Set for one erasure transaction: the append-only tables' trigger lets exactly that organization's rows be deleted
 * (`allowErasureStatements`), nothing else.
 */
export const ERASING_ORGANIZATION_SETTING = 'mileage.erasing_organization';

/** How a table's rows of an organization are found. */
export interface ErasureTable {
  table: string;
  /** The column holding the organization's id (`organization_id` unless said). */
  organizationColumn?: string;
  /**
   * Why the table's rows are not isolated by row-level security (who reads them across organizations). The catalog
   * test (tools/devstack/src/erasure.test.ts) fails on an `organization_id` table with neither the one nor the other.
   */
  withoutRowSecurity?: string;
}

/**
 * A schema's tables as erasure sees them, in one place per service: every table is either erased (in this order:
 * children before what they reference) or declared free of any organization's rows, with the reason. The catalog test
 * (tools/devstack/src/erasure.test.ts) fails on a table that is neither.
 */
export interface ErasurePlan {
  schema: string;
  tables: readonly ErasureTable[];
  organizationFree: Readonly<Record<string, string>>;
}

/** The knex migrations' bookkeeping and the erasure's own record: free of organizations in every schema. */
export const ORGANIZATION_FREE_EVERYWHERE: Readonly<Record<string, string>> = {
  knex_migrations: 'migration bookkeeping',
  knex_migrations_lock: 'migration bookkeeping',
  knex_migrations_contract: 'migration bookkeeping',
  knex_migrations_contract_lock: 'migration bookkeeping',
  [ERASED_ROWS_TABLE]: 'the erasure record: row counts per table, no personal data',
};

/** The statement of a migration creating `erased_rows` in the schema it runs in. */
export const CREATE_ERASED_ROWS_TABLE = `CREATE TABLE ${ERASED_ROWS_TABLE} (
  organization_id bigint NOT NULL,
  table_name text NOT NULL,
  rows bigint NOT NULL DEFAULT 0,
  started_at timestamptz NOT NULL DEFAULT now(),
  last_batch_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, table_name)
)`;

/**
 * The statements that let an append-only table (`makeAppendOnly`) lose the rows of the organization an erasure
 * transaction declares (`ERASING_ORGANIZATION_SETTING`), and nothing else: no UPDATE, no TRUNCATE, no other row.
 */
export function allowErasureStatements(table: string): string[] {
  return [
    `CREATE OR REPLACE FUNCTION ${table}_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND OLD.organization_id::text = current_setting('${ERASING_ORGANIZATION_SETTING}', true) THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION '${table} is append-only';
    END $$`,
  ];
}

/** The reverse of allowErasureStatements (a migration's down): no row may be deleted. */
export function strictAppendOnlyStatements(table: string): string[] {
  return [
    `CREATE OR REPLACE FUNCTION ${table}_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION '${table} is append-only';
    END $$`,
  ];
}

/** One batch: the table and the rows it deleted. */
export interface ErasureBatch {
  table: string;
  rows: number;
}

export interface EraseOptions {
  batchRows?: number;
  /** Called before each batch's COMMIT is sent (`committing`) and after it succeeded (`committed`). */
  onBatch?: (batch: ErasureBatch, phase: 'committing' | 'committed') => void;
}

/** What an erasure deleted in one schema so far: rows per table, from `erased_rows`. */
export async function erasedRows(knex: Knex, organizationId: number): Promise<Record<string, number>> {
  const rows = await knex(ERASED_ROWS_TABLE)
    .where({ organization_id: organizationId })
    .select<{ table_name: string; rows: string }[]>('table_name', 'rows');
  return Object.fromEntries(rows.map((row) => [row.table_name, Number(row.rows)]));
}

/**
 * Erases every row of `organizationId` from the plan's tables, batch by batch, and answers the counts of `erased_rows`.
 * Idempotent and resumable: a run after a kill continues with what is left; a run after completion deletes nothing.
 */
export async function eraseOrganization(
  knex: Knex,
  plan: ErasurePlan,
  organizationId: number,
  options: EraseOptions = {},
): Promise<Record<string, number>> {
  return (await eraseOrganizationBatches(knex, plan, organizationId, Infinity, options)).erasedRows;
}

/**
 * Erases at most `maxBatches` batches of `organizationId`'s rows (an RPC's share of the work); `done` when none is
 * left in the plan's tables.
 */
export async function eraseOrganizationBatches(
  knex: Knex,
  plan: ErasurePlan,
  organizationId: number,
  maxBatches: number,
  options: EraseOptions = {},
): Promise<{ erasedRows: Record<string, number>; done: boolean }> {
  if (!isOrganizationId(organizationId)) throw new Error(`not an organization id: ${String(organizationId)}`);
  const batchRows = Math.min(options.batchRows ?? ERASURE_BATCH_ROWS, ERASURE_BATCH_ROWS);
  let batches = 0;
  for (const table of plan.tables) {
    for (;;) {
      const rows = await eraseBatch(knex, table, organizationId, batchRows, options);
      // A short batch ends the table only when none of its rows is left: rows another transaction deleted while this
      // one waited for them make a batch short while more remain.
      if (rows < batchRows && !(await anyLeft(knex, table, organizationId))) break;
      if (++batches >= maxBatches) return { erasedRows: await erasedRows(knex, organizationId), done: false };
    }
  }
  return { erasedRows: await erasedRows(knex, organizationId), done: true };
}

const organizationColumnOf = (table: ErasureTable) => table.organizationColumn ?? 'organization_id';

/** Deletes one batch of a table's rows of the organization and counts it, in one transaction. */
async function eraseBatch(
  knex: Knex,
  table: ErasureTable,
  organizationId: number,
  batchRows: number,
  options: EraseOptions,
): Promise<number> {
  const rows = await inOrganization(knex, organizationId, async (trx) => {
    // One batch of an organization at a time in a schema: two runs of its erasure (a call retried while the first still
    // runs) take turns instead of waiting on each other's rows.
    await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`erasure:${organizationId}`]);
    await trx.raw('SELECT set_config(?, ?, true)', [ERASING_ORGANIZATION_SETTING, String(organizationId)]);
    const { rowCount } = await trx.raw<{ rowCount: number }>(
      `DELETE FROM ?? WHERE ctid = ANY(ARRAY(SELECT ctid FROM ?? WHERE ?? = ? LIMIT ?))`,
      [table.table, table.table, organizationColumnOf(table), organizationId, batchRows],
    );
    if (rowCount > 0) {
      await trx.raw(
        `INSERT INTO ?? (organization_id, table_name, rows) VALUES (?, ?, ?)
         ON CONFLICT (organization_id, table_name)
         DO UPDATE SET rows = ??.rows + excluded.rows, last_batch_at = now()`,
        [ERASED_ROWS_TABLE, organizationId, table.table, rowCount, ERASED_ROWS_TABLE],
      );
      options.onBatch?.({ table: table.table, rows: rowCount }, 'committing');
    }
    return rowCount;
  });
  if (rows > 0) options.onBatch?.({ table: table.table, rows }, 'committed');
  return rows;
}

/** Whether any of the table's rows of the organization is left. */
async function anyLeft(knex: Knex, table: ErasureTable, organizationId: number): Promise<boolean> {
  return inOrganization(knex, organizationId, async (trx) => {
    const { rows } = await trx.raw<{ rows: { left: boolean }[] }>(
      `SELECT EXISTS (SELECT 1 FROM ?? WHERE ?? = ?) AS left`,
      [table.table, organizationColumnOf(table), organizationId],
    );
    return rows[0]!.left;
  });
}

/**
 * The handler of an owner's `EraseOrganization` RPC (its `.proto`'s rules name the organization and the operator as
 * the only caller): at most `max_batches` batches (1 when 0) of the plan's tables, the counts so far, and `done`.
 */
export function eraseOrganizationHandler(
  knex: Knex,
  plan: ErasurePlan,
): (
  request: { maxBatches: number },
  ctx: { organizationId?: number | undefined },
) => Promise<{ erasedRows: Record<string, number>; done: boolean }> {
  return (request, ctx) =>
    eraseOrganizationBatches(knex, plan, requireOrganization(ctx), Math.max(1, Math.min(request.maxBatches, 1000)));
}
