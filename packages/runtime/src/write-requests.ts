import type { Knex } from 'knex';

/**
 * The `write_requests` table of a service that takes writes with a write id (Users, Groups): one row per id, written
 * in the write's own transaction ('applied') or by ResolveWrite ('abandoned'), whichever comes first — the primary key
 * decides. See the SCIM service's WriteJournal for why. (Each service's migration creates its table: migrations stay
 * literal, so that changing shared code never rewrites history.)
 */
export interface WriteRecord {
  outcome: 'applied' | 'abandoned';
  /** The resource the applied write touched (trimmed), null for an abandoned one. */
  resourceId: string | null;
}

const trimmed = (row: { outcome: WriteRecord['outcome']; resource_id: string | number | null }): WriteRecord => ({
  outcome: row.outcome,
  resourceId: row.resource_id === null ? null : String(row.resource_id).trim(),
});

/** Records `writeId` as applied inside the write's transaction; an id already recorded returns that record instead. */
export async function claimWrite(
  tx: Knex.Transaction,
  resourceColumn: string,
  writeId: string,
  resourceId: string | number,
): Promise<WriteRecord | undefined> {
  const claimed = await tx.raw<{ rows: unknown[] }>(
    `INSERT INTO write_requests (write_id, outcome, ??) VALUES (?, 'applied', ?) ON CONFLICT (write_id) DO NOTHING RETURNING write_id`,
    [resourceColumn, writeId, resourceId],
  );
  if (claimed.rows.length) return undefined;
  const { rows } = await tx.raw<{ rows: { outcome: WriteRecord['outcome']; resource_id: string | null }[] }>(
    `SELECT outcome, ?? AS resource_id FROM write_requests WHERE write_id = ?`,
    [resourceColumn, writeId],
  );
  return trimmed(rows[0]!);
}

/** Settles a write id: fences it as abandoned when no write has claimed it, and returns what it is now. */
export async function fenceWrite(db: Knex, resourceColumn: string, writeId: string): Promise<WriteRecord> {
  const { rows } = await db.raw<{ rows: { outcome: WriteRecord['outcome']; resource_id: string | null }[] }>(
    `WITH fenced AS (
       INSERT INTO write_requests (write_id, outcome) VALUES (?, 'abandoned') ON CONFLICT (write_id) DO NOTHING RETURNING outcome, ?? AS resource_id
     )
     SELECT outcome, resource_id FROM fenced UNION ALL SELECT outcome, ?? AS resource_id FROM write_requests WHERE write_id = ?`,
    [writeId, resourceColumn, resourceColumn, writeId],
  );
  return trimmed(rows[0]!);
}

/** Records kept this long: far beyond the SCIM service's recovery window (seconds to minutes). */
export const WRITE_RECORD_RETENTION_DAYS = 7;

/**
 * Deletes write records older than the retention, a batch at a time (short transactions, no long locks).
 * Returns how many were deleted.
 */
export async function purgeWriteRecords(
  db: Knex,
  retentionDays = WRITE_RECORD_RETENTION_DAYS,
  batch = 5_000,
): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await db.raw<{ rowCount: number }>(
      `DELETE FROM write_requests WHERE write_id IN (
         SELECT write_id FROM write_requests WHERE recorded_at < now() - make_interval(days => ?) LIMIT ?)`,
      [retentionDays, batch],
    );
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < batch) return total;
  }
}
