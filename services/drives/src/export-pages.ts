// The Drives part's pages of an organization export, read and rendered in a worker thread (pagesInWorker, from
// export-part.ts): only what the worker needs is loaded here (the runtime's worker entry, pg, the export's lines).
import {
  type BinaryRows,
  type CopiedRows,
  DutyCycle,
  type ExportFilesPage,
  joinSnapshot,
  type JoinedSnapshot,
  PageBytes,
  type SnapshotTicket,
  withIntegers,
} from '@mileage/runtime/worker';
import { binaryKinds } from './export-binary';
import { ExportRenderer } from './export-render';
import { EXPORT_COMMENTS_SQL, EXPORT_REPORTED_DRIVES_SQL } from './statements';

/**
 * Rows per statement while the part is read: memory stays flat whatever the organization's size. Each page is two
 * statements PostgreSQL plans anew (COPY takes no parameters), at normal priority beside other organizations'
 * requests, so fewer pages leave them more; larger pages cost the service's RSS and V8's helper threads more
 * (docs/benchmarks.md, "An organization exported", measures 1,000, 2,500 and 5,000).
 */
export const EXPORT_PAGE_ROWS = 2_500;

/** The COPY statement of a page of the part: `limit` reported drives after `afterDriveId`, its values written in. */
export const exportReportedDrivesPageSql = (organizationId: number, afterDriveId: number, limit = EXPORT_PAGE_ROWS) =>
  withIntegers(`${EXPORT_REPORTED_DRIVES_SQL} LIMIT ?`, [organizationId, afterDriveId, afterDriveId, limit]);
/** How a page's rows are read in binary (export-binary.ts): their columns' kinds, and the text they are written as. */
export interface BinaryPages {
  kinds: Uint8Array;
  /** The rows as COPY's text (ExportRenderer.textRows), or undefined to read the page in text. */
  toText(binary: BinaryRows, into: PageBytes): CopiedRows | undefined;
}

/** What a page is read with: a joined snapshot's COPY, in text or in binary. */
export type PageReads = Pick<JoinedSnapshot, 'copyRows' | 'copyBinaryRows'>;

/**
 * A page of an organization export's reported drives after `afterDriveId`, from a connection that joined the
 * export's snapshot: their rows as PostgreSQL's COPY of the statement sends them in text (EXPORT_COLUMNS, the columns'
 * text: the renderer writes them without objects between), read in binary and written as that text when `binary`
 * says how, and their review comments in text (EXPORT_COMMENTS_SQL, by drive id), each into its buffer when given.
 */
export async function exportReportedDrivesPage(
  snapshot: PageReads,
  organizationId: number,
  afterDriveId: number,
  limit: number,
  into?: { rows: PageBytes; comments: PageBytes; binary: PageBytes },
  binary?: BinaryPages,
): Promise<{ rows: CopiedRows; ids: number[]; comments: CopiedRows | undefined }> {
  const query = exportReportedDrivesPageSql(organizationId, afterDriveId, limit);
  const rows =
    (binary && binary.toText(await snapshot.copyBinaryRows(query, into?.binary), into?.rows ?? new PageBytes())) ??
    (await snapshot.copyRows(query, into?.rows));
  // The drive id comes first (EXPORT_COLUMNS).
  const ids = Array.from({ length: rows.length }, (_, i) => rows.firstInteger(i));
  if (!rows.length) return { rows, ids, comments: undefined };
  const range = [organizationId, ids[0]!, ids[ids.length - 1]!];
  const comments = await snapshot.copyRows(withIntegers(EXPORT_COMMENTS_SQL, range), into?.comments);
  return { rows, ids, comments };
}

/** What the worker is handed: the snapshot to join, and its pace. */
export interface DrivesPartTask {
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
    yield* renderedReportedDrivePages(snapshot, ticket.organizationId, new DutyCycle(dutyCycle));
  } finally {
    await snapshot.close();
  }
}

/**
 * The part's pages from a joined snapshot, each read while the one before it is rendered, paced by `cycle`. The pause
 * comes after the next page is asked for: PostgreSQL reads it meanwhile (one page ahead, in the other rows' buffer),
 * so the reading does not add to the pause (docs/benchmarks.md, "An organization exported", measures both orders).
 */
export async function* renderedReportedDrivePages(
  snapshot: PageReads & Pick<JoinedSnapshot, 'columnTypes'>,
  organizationId: number,
  cycle: Pick<DutyCycle, 'pace'>,
): AsyncGenerator<ExportFilesPage> {
  const renderer = new ExportRenderer();
  let pageCapacity = { json: 64 * 1024, csv: 32 * 1024 };
  // The rows' and comments' buffers, in turn: one page is rendered while the next is read into the other.
  const buffers = [0, 1].map(() => ({
    rows: new PageBytes(),
    comments: new PageBytes(16 * 1024),
    binary: new PageBytes(),
  }));
  // Read in binary when the renderer writes every column's type as text (binaryKinds), in text otherwise.
  const kinds = binaryKinds(await snapshot.columnTypes(exportReportedDrivesPageSql(organizationId, 0, 0)));
  const binary = kinds && {
    kinds,
    toText: (rows: BinaryRows, into: PageBytes) => renderer.textRows(rows, kinds, into),
  };
  let reads = 0;
  const read = (after: number) =>
    exportReportedDrivesPage(snapshot, organizationId, after, EXPORT_PAGE_ROWS, buffers[reads++ % 2], binary);
  let next: ReturnType<typeof read> | undefined = read(0);
  try {
    while (next) {
      const { rows, ids, comments }: Awaited<ReturnType<typeof read>> = await next;
      // The next page is read by PostgreSQL during the pause and while this one is rendered here.
      next = rows.length === EXPORT_PAGE_ROWS ? read(ids[ids.length - 1]!) : undefined;
      await cycle.pace();
      if (!rows.length) continue;
      const json = new PageBytes(pageCapacity.json);
      const csv = new PageBytes(pageCapacity.csv);
      renderer.renderPage(rows, ids, comments, json, csv);
      const texts = [json.take(), csv.take()];
      // The next page's buffers start at this one's sizes and the room a row asks for (writeExportedDrive's): no
      // growing on the way.
      pageCapacity = { json: texts[0]!.length + ROOM_AHEAD, csv: texts[1]!.length + ROOM_AHEAD };
      yield { rows: rows.length, texts };
    }
  } finally {
    // Stopped early (a failed write): the read under way ends with the transaction, unheard.
    next?.catch(() => {});
  }
}

const ROOM_AHEAD = 16 * 1024;
