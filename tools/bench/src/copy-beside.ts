// bench:export's floor: PostgreSQL's own COPY of the Drives part's statement in the export's pages (EXPORT_PAGE_ROWS
// after the last id, one REPEATABLE READ snapshot, the runtime role), in a process of its own whose thread is scheduled
// as the export's worker is (Linux's idle class, nice 19 where it cannot be had), its rows counted and dropped: what
// reading the rows alone, without rendering them, does to the other organization's load. Paced to BENCH_COPY_RATE
// rows/s (0: as fast as it goes). With BENCH_SPIN_SECONDS, nothing is read: the thread computes for that long, what
// the idle class itself costs the load (a thread in it that always has work). Prints one JSON line.
import { EXPORT_PAGE_ROWS, exportReportedDrivesPageSql } from '@mileage/drives';
import { copyOut } from '@mileage/runtime/database';
import { enterIdleScheduling } from '@mileage/runtime/storage';
import { setPriority } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { beginDrivesSnapshot, type CopyOutResult } from './copy-out';

async function main(): Promise<CopyOutResult> {
  setPriority(19);
  enterIdleScheduling();
  const spinSeconds = Number(process.env.BENCH_SPIN_SECONDS ?? 0);
  if (spinSeconds > 0) return spin(spinSeconds);
  const organizationId = Number(process.env.BENCH_ORGANIZATION);
  const rate = Number(process.env.BENCH_COPY_RATE ?? 0);
  const client = new pg.Client({ connectionString: process.env.BENCH_DATABASE_URL, application_name: 'bench-copy' });
  await client.connect();
  try {
    await beginDrivesSnapshot(client, organizationId);
    const started = process.hrtime.bigint();
    const elapsed = () => Number(process.hrtime.bigint() - started) / 1e9;
    let rows = 0;
    let bytes = 0;
    let after = 0;
    for (let page = 0; ; page++) {
      // Pacing: page n starts no earlier than n pages' worth of the rate after the first.
      const ahead = rate > 0 ? (page * EXPORT_PAGE_ROWS) / rate - elapsed() : 0;
      if (ahead > 0) await sleep(ahead * 1000);
      let pageRows = 0;
      await copyOut(client, exportReportedDrivesPageSql(organizationId, after), (row) => {
        pageRows++;
        bytes += row.length;
        // The drive id is the row's first column (the row is a view valid only during this call).
        after = Number(row.toString('latin1', 0, row.indexOf(9)));
      });
      rows += pageRows;
      if (pageRows < EXPORT_PAGE_ROWS) break;
    }
    const seconds = elapsed();
    await client.query('COMMIT');
    return { rows, bytes, seconds };
  } finally {
    await client.end();
  }
}

/** Computes for `seconds` on this thread, touching a few cache lines only: the work of the idle class and no more. */
function spin(seconds: number): CopyOutResult {
  const started = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - started) / 1e9;
  let sum = 0;
  while (elapsed() < seconds) for (let i = 0; i < 100_000; i++) sum = (sum + i * 7) % 1_000_003;
  // The sum is returned so that the loop is not optimised away.
  return { rows: 0, bytes: sum < 0 ? 1 : 0, seconds: elapsed() };
}

main().then(
  (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
