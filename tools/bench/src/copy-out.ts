// PostgreSQL's own `COPY (query) TO STDOUT`, its rows counted and dropped as they arrive: the ceiling bench:export
// holds an export's rows per second against.
import { copyOut } from '@mileage/runtime/database';
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
