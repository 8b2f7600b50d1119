// Statements that the API's reads (drives-repo.ts) and the export's worker thread (export-pages.ts) both run, in a
// module the worker loads without the repository's own imports.
import { EXPORT_COLUMNS, EXPORT_COMMENT_COLUMNS } from './export-lines';
import type { CommentRow } from './rows';

/** A comment's columns (CommentRow), as the API's reads take them. */
const SELECT_COMMENTS = 'SELECT id, drive_id, text, user_email, created_at FROM review_comments';

// The review comments of a page's drives: one statement for any number of drives (an array parameter).
export const COMMENTS_SQL = `${SELECT_COMMENTS}
  WHERE organization_id = ? AND drive_id = ANY(?::bigint[]) ORDER BY drive_id, id`;
/**
 * COMMENTS_SQL's parameters for these drives of the organization: their ids as one array literal. node-postgres would
 * build it from the array by concatenation, a string per id.
 */
export const commentsParameters = (organizationId: number, driveIds: readonly number[]): [number, string] => [
  organizationId,
  `{${driveIds.join(',')}}`,
];

/**
 * The review comments of an export's page, by the range of its drive ids (organization, the first and the last, both
 * included): one index range of the organization's comments rather than a probe for each of the page's drives. Read
 * by COPY, its columns in EXPORT_COMMENT_COLUMNS's order, each drive's comments one after the other.
 */
export const EXPORT_COMMENTS_SQL = `SELECT ${EXPORT_COMMENT_COLUMNS.join(', ')} FROM review_comments
  WHERE organization_id = ? AND drive_id BETWEEN ? AND ? ORDER BY drive_id, id`;

/** COMMENTS_SQL's (or COMMENTS_IN_RANGE_SQL's) rows by drive id, each drive's in the statement's order. */
export function commentsByDrive(rows: readonly CommentRow[]): Map<number, CommentRow[]> {
  const byDrive = new Map<number, CommentRow[]>();
  for (const row of rows) {
    const key = Number(row.drive_id);
    const list = byDrive.get(key);
    if (list) list.push(row);
    else byDrive.set(key, [row]);
  }
  return byDrive;
}

/**
 * The reported drives of an organization export, in drive id order after a drive id (organization, after, after): its
 * pages add `LIMIT`. The position bounds both sides of the join: bound on the reports alone, PostgreSQL merged them with
 * the drives read from the organization's first (a page at the 500,000th drive read 500,000, 1 s instead of 7 ms).
 * Named so that bench:export runs the same statement through PostgreSQL's own COPY beside the export.
 */
export const EXPORT_REPORTED_DRIVES_SQL = `SELECT ${EXPORT_COLUMNS.join(', ')} FROM drive_reports r
      JOIN drives d ON d.id = r.drive_id WHERE r.organization_id = ? AND r.drive_id > ? AND d.id > ? ORDER BY r.drive_id`;
