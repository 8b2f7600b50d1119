import {
  DRIVER_PLACEHOLDER,
  renderReportedDrivesPage,
  renderUserDrivesPage,
  type DriveDetails,
  type DriveSchema,
  type RenderedReportedDrives,
  type ReportedDriveItem,
} from '@mileage/drive-json';
import type { drivesV1 } from '@mileage/proto';
import { apiTime } from '@mileage/runtime/formats';
import { place, reviewCommentOf } from './representation';
import type { CommentRow, DriveRow, ReportRow } from './rows';
import { wire } from './stamps';

/*
 * A page's rows straight to the API's JSON, without building each drive's message first (toDrive, then drive-json's
 * toDriveSchema): the same fields by the same conversions, so the same bytes (render.test.ts compares both paths over
 * generated rows). The message path stays for a caller that asks for messages, and for the gateway's fallback.
 */

function money(amount: string | null, currency: string | null) {
  return amount !== null && currency !== null ? { amount: Number(amount), currency } : null;
}

function details(row: DriveRow): DriveDetails {
  return {
    distance:
      row.distance_amount !== null && row.distance_units !== null
        ? {
            amount: Number(row.distance_amount),
            units: row.distance_units,
            discounted: row.distance_discounted !== null ? Number(row.distance_discounted) : null,
          }
        : null,
    value: money(row.value_amount, row.value_currency),
    toll_fees: money(row.toll_amount, row.toll_currency),
    parking_fees: money(row.parking_amount, row.parking_currency),
    description: row.description ?? null,
    entry: row.entry === 'manual' ? 'manual' : 'automatic',
    // The column's CHECK admits only the API's names (or NULL).
    classification: row.classification as DriveDetails['classification'],
    purpose: row.purpose ?? null,
    start: place(row.start_location),
    end: place(row.end_location),
  };
}

/** A drive row in the API's DriveSchema. */
export function driveSchemaOf(row: DriveRow): DriveSchema {
  return {
    drive_id: Number(row.id),
    created: apiTime(wire(row.created_at)),
    modified: apiTime(wire(row.modified_at)),
    started_at: apiTime(wire(row.started_at)),
    ended_at: apiTime(wire(row.ended_at)),
    ...details(row),
  };
}

/** A reported drive's row and comments in the API's ReportedDriveSchema, its driver the placeholder. */
export function reportedDriveItemOf(row: DriveRow & ReportRow, comments: CommentRow[]): ReportedDriveItem {
  return {
    body: {
      id: String(Number(row.id)),
      driver: DRIVER_PLACEHOLDER,
      details: details(row),
      created: apiTime(wire(row.reported_at)),
      modified: apiTime(wire(row.report_modified_at)),
      status: row.status,
      review_comments: comments.map(reviewCommentOf),
    },
    driverId: row.user_id,
    driverTime: wire(row.ended_at),
  };
}

/** What ListUserDrives answers in `results_json`, from the page's rows. */
export function renderUserDriveRows(rows: DriveRow[], tombstones: drivesV1.Tombstone[]): Buffer {
  return renderUserDrivesPage(rows.map(driveSchemaOf), tombstones);
}

/** What ListReportedDrives answers in `results_json` and `driver_slots`, from the page's rows and comments. */
export function renderReportedRows(
  reported: { row: DriveRow & ReportRow; comments: CommentRow[] }[],
  tombstones: drivesV1.Tombstone[],
): RenderedReportedDrives {
  return renderReportedDrivesPage(
    reported.map(({ row, comments }) => reportedDriveItemOf(row, comments)),
    tombstones,
  );
}
