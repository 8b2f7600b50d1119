// PostgreSQL's own `COPY (query) TO STDOUT`, its rows counted and dropped as they arrive: the ceiling bench:export
// holds an export's rows per second against.
import { copyOut, ORGANIZATION_SETTING } from '@mileage/runtime/database';
import type pg from 'pg';

export interface CopyOutResult {
  rows: number;
  bytes: number;
  seconds: number;
}

/** Runs `COPY (<query>) TO STDOUT` (text format) on `client` and counts what it sends. */
export async function countCopyOut(client: pg.Client, query: string): Promise<CopyOutResult> {
  const started = process.hrtime.bigint();
  let rows = 0;
  let bytes = 0;
  await copyOut(client, query, (row) => {
    rows++;
    bytes += row.length;
  });
  return { rows, bytes, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

/**
 * Opens on `client` the transaction the Drives service reads its export part in: one REPEATABLE READ READ ONLY
 * snapshot of its schema, inside the organization (its runtime role's row-level security applies).
 */
export async function beginDrivesSnapshot(client: pg.Client, organizationId: number): Promise<void> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  await client.query('SET LOCAL search_path = drives');
  await client.query('SELECT set_config($1, $2, true)', [ORGANIZATION_SETTING, String(organizationId)]);
}
