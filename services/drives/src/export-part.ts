import { shareSnapshot, snapshotInOrganization, type Knex } from '@mileage/runtime/database';
import { type ArchiveStore, type ExportPartFile, pagesInWorker, writeExportFiles } from '@mileage/runtime/storage';
import { csvLine } from './csv';
import { EXPORT_CSV_COLUMNS } from './export-lines';
import { type DrivesPartTask, reportedDrivePagesInSnapshot } from './export-pages';

/**
 * The share of the wall time the export works by default (EXPORT_DUTY_CYCLE, DutyCycle): all of it. The worker renders
 * in the idle scheduling class and yields to requests by itself; what it sets going does not (PostgreSQL's backend
 * sending its rows, about 4 µs a row in COPY's binary format, the service thread's writes and V8's helper threads run
 * at normal priority, in proportion to the part's rate), and a lower value pauses the worker to hold those back. In six
 * pairs of bench:export runs at 1 and 0.85 in turn, 1 ran the part faster in five, and the other organization's p99 did
 * not separate (docs/benchmarks.md, "An organization exported"). Lower it where other organizations' latency suffers.
 */
export const DEFAULT_EXPORT_DUTY_CYCLE = 1;

/**
 * The Drives service's part of an organization export (CONTRACT §8), from one snapshot of its schema: every drive
 * reported to the organization's groups, as JSON Lines (the reported-drives representation with its review comments;
 * the driver as `{"id"}`, whom the Users part describes) and as CSV. The rows are read once, by PostgreSQL's COPY a
 * page of EXPORT_PAGE_ROWS drives at a time (in its binary format, export-binary.ts); each page is rendered into both
 * files, compressed as the archive holds them (the archive copies them, tarGz) and written here as the pages arrive.
 * The reading, rendering, compressing and hashing run in a worker thread in Linux's idle scheduling class
 * (pagesInWorker with `files`, encodedPages, export-pages.ts; whether it could enter it is told to `onScheduled`): the
 * service's thread only writes what it is handed (writeExportFiles' `encoded`). The worker reads on a connection of
 * its own that joined this transaction's snapshot (shareSnapshot): the transaction holds the organization's place in
 * the pool and the snapshot until the last page; the worker's connection is one more while it runs, at most one per
 * place.
 */
export async function writeDrivesExportPart(
  knex: Knex,
  store: ArchiveStore,
  organizationId: number,
  exportId: string,
  dutyCycle = DEFAULT_EXPORT_DUTY_CYCLE,
  onScheduled?: (idle: boolean) => void,
): Promise<ExportPartFile[]> {
  return snapshotInOrganization(knex, organizationId, async (trx) => {
    const task: DrivesPartTask = { ticket: await shareSnapshot(knex, trx, organizationId), dutyCycle };
    const files = [
      { name: 'reported_drives.jsonl', gzip: true },
      { name: 'reported_drives.csv', header: csvLine(EXPORT_CSV_COLUMNS), gzip: true },
    ];
    const module = require.resolve('./export-pages');
    return writeExportFiles(
      store,
      exportId,
      files,
      pagesInWorker({ module, exportName: reportedDrivePagesInSnapshot.name, data: task, files }, onScheduled),
      true,
    );
  });
}
