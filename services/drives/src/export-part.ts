import {
  DutyCycle,
  snapshotInOrganization,
  statementsOf,
  type Knex,
  type ReadStatements,
} from '@mileage/runtime/database';
import { setImmediate as turn } from 'node:timers/promises';
import {
  type ArchiveStore,
  type ExportFilesPage,
  type ExportPartFile,
  writeExportFiles,
} from '@mileage/runtime/storage';
import type { ReportedDriveItem } from '@mileage/drive-json';
import { csvLine } from './csv';
import { exportReportedDrivesPage } from './drives-repo';
import { reportedDriveItemOf } from './render';

/** Rows per statement while the part is read: memory stays flat whatever the organization's size. */
const PAGE_ROWS = 1_000;
/** Rows rendered in one turn of the event loop: the requests this process serves meanwhile wait at most that long. */
const ROWS_PER_TURN = 250;
/**
 * The share of the wall time the export works by default (EXPORT_DUTY_CYCLE, DutyCycle): it is background work beside
 * every other organization's requests on the same cores and database (docs/architecture.md, "Organization exports").
 */
export const DEFAULT_EXPORT_DUTY_CYCLE = 0.5;

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
 * time, and each page is rendered into both files, which are written as they are read (writeExportFiles). Paced to
 * `dutyCycle` of the wall time, rendering a few hundred rows per turn of the event loop.
 */
export async function writeDrivesExportPart(
  knex: Knex,
  store: ArchiveStore,
  organizationId: number,
  exportId: string,
  dutyCycle = DEFAULT_EXPORT_DUTY_CYCLE,
): Promise<ExportPartFile[]> {
  return snapshotInOrganization(knex, organizationId, async (trx) =>
    writeExportFiles(
      store,
      exportId,
      [{ name: 'reported_drives.jsonl' }, { name: 'reported_drives.csv', header: csvLine(CSV_COLUMNS) }],
      pages(await statementsOf(trx), organizationId, dutyCycle),
    ),
  );
}

/** A reported drive as the export writes it: its driver only by id. */
type ExportedDrive = Omit<ReportedDriveItem['body'], 'driver'> & { driver: { id: string } };

async function* pages(run: ReadStatements, organizationId: number, dutyCycle: number): AsyncGenerator<ExportFilesPage> {
  const cycle = new DutyCycle(dutyCycle);
  const read = (after: number) => exportReportedDrivesPage(run, organizationId, after, PAGE_ROWS);
  let next: ReturnType<typeof read> | undefined = read(0);
  try {
    while (next) {
      const page: Awaited<ReturnType<typeof read>> = await next;
      await cycle.pace();
      // The next page is read by PostgreSQL while this one is rendered here.
      next = page.length === PAGE_ROWS ? read(Number(page[page.length - 1]!.row.id)) : undefined;
      let json = '';
      let csv = '';
      for (let i = 0; i < page.length; i++) {
        if (i && i % ROWS_PER_TURN === 0) await turn();
        const { row, comments } = page[i]!;
        const item = reportedDriveItemOf(row, comments);
        // In place of the placeholder, so the key keeps its place in the line.
        const body: ExportedDrive = { ...item.body, driver: { id: item.driverId } };
        json += `${JSON.stringify(body)}\n`;
        csv += csvRow(body);
      }
      if (page.length) yield { rows: page.length, texts: [json, csv] };
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
