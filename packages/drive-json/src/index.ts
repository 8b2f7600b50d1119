import type { drivesV1 } from '@mileage/proto';
import { apiTime } from '@mileage/runtime';

/*
 * The External API's drive shapes (DriveSchema, ReportedDriveSchema, their tombstones) and their JSON. The Drives
 * service renders its pages with them, so that the gateway passes a page through as bytes instead of decoding,
 * mapping and serializing every drive; the gateway uses the same functions for a service that answers objects (one
 * older than `render_json`), so both paths give the same bytes.
 */

type Money = { amount: number; currency: string } | null;
type Geolocation = {
  name: string;
  lat: string | null;
  lon: string | null;
  time: string;
  address: { country: string; state: string; city: string; street: string; postal_code: string } | null;
} | null;

/** The drive detail fields shared by DriveSchema and ReportedDriveSchema.details. */
export interface DriveDetails {
  distance: { amount: number; units: string; discounted?: number | null } | null;
  value: Money;
  toll_fees: Money;
  parking_fees: Money;
  description: string | null;
  entry: 'manual' | 'automatic';
  classification: 'business' | 'personal' | 'unclassified' | null;
  purpose: string | null;
  start: Geolocation;
  end: Geolocation;
}

export interface DriveSchema extends DriveDetails {
  drive_id: number;
  created: string;
  modified: string;
  started_at: string;
  ended_at: string;
}

/** The driver of a reported drive: the gateway renders it from the Users service's profile. */
export interface DriverSchema {
  id: string;
  name: string | null;
  email: string | null;
  status: 'active' | 'inactive';
  timezone_offset: number;
}

export interface ReportedDriveSchema {
  id: string;
  driver: DriverSchema;
  details: DriveDetails;
  created: string;
  modified: string;
  status: string;
  review_comments: { id: string; text: string; created_at: string; user_email: string }[];
}

/** (+) A deleted drive in a user's drives (`include_deleted=true`). */
export interface DriveTombstoneSchema {
  drive_id: number;
  deleted: true;
  modified: string;
}

/** (+) A withdrawn report or deleted drive in reported drives (`include_deleted=true`). */
export interface ReportedDriveTombstoneSchema {
  id: string;
  deleted: true;
  modified: string;
}

const CLASSIFICATION_NAMES = { 1: 'business', 2: 'personal', 3: 'unclassified' } as const;

function money(m: drivesV1.Money | undefined): Money {
  return m ? { amount: m.amount, currency: m.currency } : null;
}

function geolocation(g: drivesV1.Geolocation | undefined): Geolocation {
  if (!g) return null;
  return {
    name: g.name,
    lat: g.lat ?? null,
    lon: g.lon ?? null,
    time: apiTime(g.time),
    address: g.address
      ? {
          country: g.address.country,
          state: g.address.state,
          city: g.address.city,
          street: g.address.street,
          postal_code: g.address.postalCode,
        }
      : null,
  };
}

export function toDriveDetails(d: drivesV1.Drive): DriveDetails {
  return {
    distance: d.distance
      ? { amount: d.distance.amount, units: d.distance.units, discounted: d.distance.discounted ?? null }
      : null,
    value: money(d.value),
    toll_fees: money(d.tollFees),
    parking_fees: money(d.parkingFees),
    description: d.description ?? null,
    entry: d.entry === 1 ? 'manual' : 'automatic',
    classification: CLASSIFICATION_NAMES[d.classification as 1 | 2 | 3] ?? null,
    purpose: d.purpose ?? null,
    start: geolocation(d.start),
    end: geolocation(d.end),
  };
}

export function toDriveSchema(d: drivesV1.Drive): DriveSchema {
  return {
    drive_id: d.id,
    created: apiTime(d.createTime),
    modified: apiTime(d.updateTime),
    started_at: apiTime(d.startTime),
    ended_at: apiTime(d.endTime),
    ...toDriveDetails(d),
  };
}

export function toReportedDriveSchema(r: drivesV1.ReportedDrive, driver: DriverSchema): ReportedDriveSchema {
  const d = r.drive!;
  return {
    id: String(d.id),
    driver,
    details: toDriveDetails(d),
    created: apiTime(r.reportTime),
    modified: apiTime(r.updateTime),
    status: r.status,
    review_comments: r.reviewComments.map((c) => ({
      id: String(c.id),
      text: c.text,
      created_at: apiTime(c.createTime),
      user_email: c.userEmail,
    })),
  };
}

export function toDriveTombstoneSchema(t: drivesV1.Tombstone): DriveTombstoneSchema {
  return { drive_id: t.driveId, deleted: true, modified: apiTime(t.deleteTime) };
}

export function toReportedDriveTombstoneSchema(t: drivesV1.Tombstone): ReportedDriveTombstoneSchema {
  return { id: String(t.driveId), deleted: true, modified: apiTime(t.deleteTime) };
}

/**
 * Live items and tombstones of one page in list order: modified time, then drive id, both descending (the service's
 * keyset order, in which it cut the page). Times are the API's RFC 3339 UTC strings with milliseconds, so they
 * compare as text.
 */
function inListOrder<T>(items: { time: string; id: number; body: T }[]): T[] {
  return items.sort((a, b) => (a.time === b.time ? b.id - a.id : a.time < b.time ? 1 : -1)).map((item) => item.body);
}

/** A page of a user's drives as the API's `results` array, in list order. */
export function userDrivesResults(
  drives: drivesV1.Drive[],
  tombstones: drivesV1.Tombstone[],
): (DriveSchema | DriveTombstoneSchema)[] {
  const results = drives.map(toDriveSchema);
  if (tombstones.length === 0) return results;
  return inListOrder<DriveSchema | DriveTombstoneSchema>([
    ...results.map((body) => ({ time: body.modified, id: body.drive_id, body })),
    ...tombstones.map(toDriveTombstoneSchema).map((body) => ({ time: body.modified, id: body.drive_id, body })),
  ]);
}

/** The same as UTF-8 JSON: what ListUserDrives answers in `results_json`. */
export function renderUserDrivesResults(drives: drivesV1.Drive[], tombstones: drivesV1.Tombstone[]): Buffer {
  return Buffer.from(JSON.stringify(userDrivesResults(drives, tombstones)));
}

/** A reported drive rendered around its driver, or a tombstone (head alone), as ListReportedDrives answers it. */
export type RenderedReportedDrive = drivesV1.RenderedReportedDrive;

// Stands for the driver while an item is rendered; its JSON (`0`) cannot occur in the text before the driver, which
// is `{"id":"<digits>","driver":`, so the first occurrence is where the driver goes.
const DRIVER_PLACEHOLDER = 0 as unknown as DriverSchema;
const DRIVER_SLOT = '"driver":0';

function renderReportedDrive(r: drivesV1.ReportedDrive): RenderedReportedDrive {
  const json = JSON.stringify(toReportedDriveSchema(r, DRIVER_PLACEHOLDER));
  const slot = json.indexOf(DRIVER_SLOT) + DRIVER_SLOT.length - 1;
  return {
    head: Buffer.from(json.slice(0, slot)),
    tail: Buffer.from(json.slice(slot + 1)),
    driverId: r.drive!.userId,
    ...(r.drive!.endTime ? { driverTime: r.drive!.endTime } : {}),
  };
}

function renderTombstone(t: drivesV1.Tombstone): RenderedReportedDrive {
  return { head: Buffer.from(JSON.stringify(toReportedDriveTombstoneSchema(t))), tail: Buffer.alloc(0), driverId: '' };
}

/** A page of reported drives and tombstones as the items of the API's `results`, in list order. */
export function renderReportedDrives(
  reported: drivesV1.ReportedDrive[],
  tombstones: drivesV1.Tombstone[],
): RenderedReportedDrive[] {
  const items = reported.map(renderReportedDrive);
  if (tombstones.length === 0) return items;
  return inListOrder<RenderedReportedDrive>([
    ...reported.map((r, i) => ({ time: apiTime(r.updateTime), id: r.drive!.id, body: items[i]! })),
    ...tombstones.map((t) => ({ time: apiTime(t.deleteTime), id: t.driveId, body: renderTombstone(t) })),
  ]);
}

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/**
 * The chunks of the `results` array of a rendered page of reported drives; `driver` gives each driver's JSON at the
 * drive's end time (the gateway reads the drivers from the Users service).
 */
export function reportedDrivesResultsChunks(
  items: RenderedReportedDrive[],
  driver: (driverId: string, at: drivesV1.RenderedReportedDrive['driverTime']) => Uint8Array,
): Uint8Array[] {
  const chunks: Uint8Array[] = [OPEN];
  items.forEach((item, i) => {
    if (i > 0) chunks.push(COMMA);
    chunks.push(item.head);
    if (item.driverId) chunks.push(driver(item.driverId, item.driverTime), item.tail);
  });
  chunks.push(CLOSE);
  return chunks;
}
