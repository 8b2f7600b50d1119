import type { Knex } from 'knex';

/** An entry of an owner's provisioning trail as an export reads it: its id, its exact time, and the columns asked for. */
export type TrailEntryRow = Record<string, unknown> & { id: string; at: string };

/**
 * An organization's entries of an owner's provisioning trail (`table`), oldest first in the order (time, id) every
 * owner's trail shares, `pageRows` per statement, in the caller's transaction (an export's snapshot). `at` is the
 * time exactly as stored — UTC to the microsecond, fixed width, so it sorts as text — which lets the owners' parts be
 * merged into one trail without ties broken wrongly (the Users export job merges them). `columns` is the owner's own
 * column list, from its code (never from input).
 */
export async function* trailOldestFirst(
  trx: Knex.Transaction,
  table: string,
  columns: string,
  organizationId: number,
  pageRows = 1_000,
): AsyncGenerator<TrailEntryRow> {
  let after = { at: '-infinity', id: '0' };
  for (;;) {
    const { rows } = await trx.raw<{ rows: TrailEntryRow[] }>(
      `SELECT id::text AS id, to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, ${columns}
         FROM ?? WHERE organization_id = ? AND (occurred_at, id) > (?::timestamptz, ?::bigint)
        ORDER BY occurred_at, id LIMIT ?`,
      [table, organizationId, after.at, after.id, pageRows],
    );
    yield* rows;
    if (rows.length < pageRows) return;
    after = rows[rows.length - 1]!;
  }
}
