import {
  DutyCycle,
  joinSnapshot,
  shareSnapshot,
  snapshotInOrganization,
  type Knex,
  type ReadStatements,
  type SnapshotTicket,
} from '@mileage/runtime/database';
import {
  type ArchiveStore,
  type ExportFilesPage,
  type ExportPartFile,
  PageBytes,
  pagesInWorker,
  writeExportFiles,
} from '@mileage/runtime/storage';
import type { ReportedDriveItem } from '@mileage/drive-json';
import { csvLine } from './csv';
import { exportReportedDrivesPage } from './drives-repo';
import { reportedDriveItemOf } from './render';

/** Rows per statement while the part is read: memory stays flat whatever the organization's size. */
const PAGE_ROWS = 1_000;
/**
 * The share of the wall time the export works by default (EXPORT_DUTY_CYCLE, DutyCycle): all of it, since the part is
 * read and rendered by a worker thread at the lowest CPU priority (pagesInWorker), which yields to every request by
 * itself; a smaller duty cycle also spares the database (docs/architecture.md, "Organization exports").
 */
export const DEFAULT_EXPORT_DUTY_CYCLE = 1;

/** The CSV's columns: one row per reported drive, for spreadsheets. */
const CSV_COLUMNS = [
  'id',
  'driver_id',
  'status',
  'reported_at',
  'modified',
  'started_at',
  'ended_at',
  'classification',
  'purpose',
  'description',
  'distance',
  'distance_units',
  'value',
  'toll_fees',
  'parking_fees',
  'currency',
  'start',
  'end',
  'review_comments',
] as const;

/**
 * The Drives service's part of an organization export (CONTRACT §8), from one snapshot of its schema: every drive
 * reported to the organization's groups, as JSON Lines (the reported-drives representation with its review comments;
 * the driver as `{"id"}`, whom the Users part describes) and as CSV. The rows are read once, a page of 1,000 drives at a
 * time, and each page is rendered into both files, which are written here as they arrive (writeExportFiles). The
 * reading and rendering run in a worker thread at the lowest CPU priority (pagesInWorker), on a connection of its own
 * that joined this transaction's snapshot (shareSnapshot): the transaction holds the organization's place in the pool
 * and the snapshot until the last page; the worker's connection is one more while it runs, at most one per place.
 */
export async function writeDrivesExportPart(
  knex: Knex,
  store: ArchiveStore,
  organizationId: number,
  exportId: string,
  dutyCycle = DEFAULT_EXPORT_DUTY_CYCLE,
): Promise<ExportPartFile[]> {
  return snapshotInOrganization(knex, organizationId, async (trx) => {
    const task: DrivesPartTask = { ticket: await shareSnapshot(knex, trx, organizationId), dutyCycle };
    return writeExportFiles(
      store,
      exportId,
      [{ name: 'reported_drives.jsonl' }, { name: 'reported_drives.csv', header: csvLine(CSV_COLUMNS) }],
      pagesInWorker({ module: __filename, exportName: reportedDrivePagesInSnapshot.name, data: task }),
    );
  });
}

/** What the worker is handed: the snapshot to join, and its pace. */
interface DrivesPartTask {
  ticket: SnapshotTicket;
  dutyCycle: number;
}

/** The part's pages, in the worker thread (pagesInWorker): read from the shared snapshot and rendered. */
export async function* reportedDrivePagesInSnapshot({
  ticket,
  dutyCycle,
}: DrivesPartTask): AsyncGenerator<ExportFilesPage> {
  const snapshot = await joinSnapshot(ticket);
  try {
    yield* pages(snapshot.run, ticket.organizationId, dutyCycle);
  } finally {
    await snapshot.close();
  }
}

/** A reported drive as the export writes it: its driver only by id. */
type ExportedDrive = Omit<ReportedDriveItem['body'], 'driver'> & { driver: { id: string } };

async function* pages(run: ReadStatements, organizationId: number, dutyCycle: number): AsyncGenerator<ExportFilesPage> {
  const cycle = new DutyCycle(dutyCycle);
  let pageCapacity = { json: 64 * 1024, csv: 32 * 1024 };
  const read = (after: number) => exportReportedDrivesPage(run, organizationId, after, PAGE_ROWS);
  let next: ReturnType<typeof read> | undefined = read(0);
  try {
    while (next) {
      const page: Awaited<ReturnType<typeof read>> = await next;
      await cycle.pace();
      // The next page is read by PostgreSQL while this one is rendered here.
      next = page.length === PAGE_ROWS ? read(Number(page[page.length - 1]!.row.id)) : undefined;
      const json = new PageBytes(pageCapacity.json);
      const csv = new PageBytes(pageCapacity.csv);
      for (const { row, comments } of page) {
        const item = reportedDriveItemOf(row, comments);
        // In place of the placeholder, so the key keeps its place in the line.
        const body: ExportedDrive = { ...item.body, driver: { id: item.driverId } };
        json.write(JSON.stringify(body));
        json.write('\n');
        csv.write(csvRow(body));
      }
      if (!page.length) continue;
      const texts = [json.take(), csv.take()];
      // The next page's bytes start at this one's size: no growing on the way.
      pageCapacity = { json: texts[0]!.length + 4096, csv: texts[1]!.length + 4096 };
      yield { rows: page.length, texts };
    }
  } finally {
    // Stopped early (a failed write): the read under way ends with the transaction, unheard.
    next?.catch(() => {});
  }
}

function csvRow(item: ExportedDrive): string {
  const d = item.details;
  return csvLine([
    item.id,
    item.driver.id,
    item.status,
    item.created,
    item.modified,
    d.start?.time ?? '',
    d.end?.time ?? '',
    d.classification ?? '',
    d.purpose ?? '',
    d.description ?? '',
    d.distance?.amount ?? '',
    d.distance?.units ?? '',
    d.value?.amount ?? '',
    d.toll_fees?.amount ?? '',
    d.parking_fees?.amount ?? '',
    d.value?.currency ?? d.toll_fees?.currency ?? d.parking_fees?.currency ?? '',
    d.start?.name ?? '',
    d.end?.name ?? '',
    item.review_comments.map((c) => c.text).join(' | '),
  ]);
}
