import { snapshotInOrganization, type Knex } from '@mileage/runtime/database';
import { type ArchiveStore, type ExportPartFile, writeExportPart } from '@mileage/runtime/storage';
import { stringify } from 'csv-stringify/sync';
import { exportReportedDrivesPage } from './drives-repo';
import { reportedDriveItemOf } from './render';

/** Rows per statement while the part is read: memory stays flat whatever the organization's size. */
const PAGE_ROWS = 1_000;

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
 * the driver as `{"id"}`, whom the Users part describes) and as CSV. Both files are written as they are read, a page
 * of 1,000 drives at a time, each from its own pass over the same snapshot.
 */
export async function writeDrivesExportPart(
  knex: Knex,
  store: ArchiveStore,
  organizationId: number,
  exportId: string,
): Promise<ExportPartFile[]> {
  return snapshotInOrganization(knex, organizationId, async (trx) => [
    await writeExportPart(store, exportId, 'reported_drives.jsonl', jsonLines(trx, organizationId)),
    await writeExportPart(
      store,
      exportId,
      'reported_drives.csv',
      csvLines(trx, organizationId),
      stringify([CSV_COLUMNS as unknown as string[]]),
    ),
  ]);
}

async function* items(trx: Knex.Transaction, organizationId: number) {
  for (let after = 0; ;) {
    const page = await exportReportedDrivesPage(trx, organizationId, after, PAGE_ROWS);
    for (const { row, comments } of page) {
      const item = reportedDriveItemOf(row, comments);
      yield { ...item.body, driver: { id: item.driverId } };
    }
    if (page.length < PAGE_ROWS) return;
    after = Number(page[page.length - 1]!.row.id);
  }
}

async function* jsonLines(trx: Knex.Transaction, organizationId: number): AsyncGenerator<string> {
  for await (const item of items(trx, organizationId)) yield `${JSON.stringify(item)}\n`;
}

async function* csvLines(trx: Knex.Transaction, organizationId: number): AsyncGenerator<string> {
  for await (const item of items(trx, organizationId)) {
    const d = item.details;
    const row = stringify([
      [
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
      ],
    ]);
    yield row;
  }
}
