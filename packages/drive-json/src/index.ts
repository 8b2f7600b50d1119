import type { drivesV1 } from '@mileage/proto';
import { apiTime } from '@mileage/runtime/formats';

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
function inListOrder<T extends { time: string; id: number }>(items: T[]): T[] {
  return items.sort((a, b) => (a.time === b.time ? b.id - a.id : a.time < b.time ? 1 : -1));
}

/** A page of a user's drives as the API's `results` array, in list order. */
export function userDrivesResults(
  drives: drivesV1.Drive[],
  tombstones: drivesV1.Tombstone[],
): (DriveSchema | DriveTombstoneSchema)[] {
  return userDrivesPage(drives.map(toDriveSchema), tombstones);
}

/** The same from drives already in the API's shape (the Drives service builds them from its rows). */
function userDrivesPage(results: DriveSchema[], tombstones: drivesV1.Tombstone[]) {
  if (tombstones.length === 0) return results;
  return inListOrder<{ time: string; id: number; body: DriveSchema | DriveTombstoneSchema }>([
    ...results.map((body) => ({ time: body.modified, id: body.drive_id, body })),
    ...tombstones.map(toDriveTombstoneSchema).map((body) => ({ time: body.modified, id: body.drive_id, body })),
  ]).map((item) => item.body);
}

/** The same as UTF-8 JSON: what ListUserDrives answers in `results_json`. */
export function renderUserDrivesResults(drives: drivesV1.Drive[], tombstones: drivesV1.Tombstone[]): Buffer {
  return renderUserDrivesPage(drives.map(toDriveSchema), tombstones);
}

/** renderUserDrivesResults from drives already in the API's shape, in list order. */
export function renderUserDrivesPage(results: DriveSchema[], tombstones: drivesV1.Tombstone[]): Buffer {
  return Buffer.from(JSON.stringify(userDrivesPage(results, tombstones)));
}

/** A rendered page of reported drives, as ListReportedDrives answers it. */
export type RenderedReportedDrives = Pick<drivesV1.ListReportedDrivesResponse, 'resultsJson' | 'driverSlots'>;

/**
 * Stands for each driver while a page is rendered. Its JSON, `"driver":0`, can only be the driver's key and value:
 * inside a JSON string every quote is escaped, and no other key is "driver".
 */
export const DRIVER_PLACEHOLDER = 0 as unknown as DriverSchema;
const DRIVER_SLOT = Buffer.from('"driver":0');

/** A reported drive in the API's shape, its driver still the placeholder, with whose driver it is and when. */
export interface ReportedDriveItem {
  body: ReportedDriveSchema;
  driverId: string;
  driverTime?: drivesV1.DriverSlot['driverTime'];
}

/**
 * A page of reported drives and tombstones as the API's `results` array, in list order, with a placeholder for each
 * driver and where it is.
 */
export function renderReportedDrives(
  reported: drivesV1.ReportedDrive[],
  tombstones: drivesV1.Tombstone[],
): RenderedReportedDrives {
  return renderReportedDrivesPage(
    reported.map((r) => ({
      body: toReportedDriveSchema(r, DRIVER_PLACEHOLDER),
      driverId: r.drive!.userId,
      ...(r.drive!.endTime ? { driverTime: r.drive!.endTime } : {}),
    })),
    tombstones,
  );
}

/** renderReportedDrives from reported drives already in the API's shape, in list order. */
export function renderReportedDrivesPage(
  reported: ReportedDriveItem[],
  tombstones: drivesV1.Tombstone[],
): RenderedReportedDrives {
  type Item = { time: string; id: number; body: object; reported?: ReportedDriveItem };
  const items: Item[] = reported.map((r) => ({
    time: r.body.modified,
    id: Number(r.body.id),
    body: r.body,
    reported: r,
  }));
  const ordered =
    tombstones.length === 0
      ? items
      : inListOrder<Item>([
          ...items,
          ...tombstones.map((t) => ({
            time: apiTime(t.deleteTime),
            id: t.driveId,
            body: toReportedDriveTombstoneSchema(t),
          })),
        ]);
  const resultsJson = Buffer.from(JSON.stringify(ordered.map((item) => item.body)));
  const driverSlots: drivesV1.DriverSlot[] = [];
  let from = 0;
  for (const { reported: r } of ordered) {
    if (!r) continue;
    const offset = resultsJson.indexOf(DRIVER_SLOT, from) + DRIVER_SLOT.length - 1;
    driverSlots.push({ offset, driverId: r.driverId, ...(r.driverTime ? { driverTime: r.driverTime } : {}) });
    from = offset + 1;
  }
  return { resultsJson, driverSlots };
}

/**
 * The chunks of a rendered page's `results` array with each placeholder replaced by its driver's JSON at the drive's
 * end time (`driver`: the gateway reads the drivers from the Users service). Throws on slots that do not point at
 * placeholders in order.
 */
export function reportedDrivesResultsChunks(
  page: RenderedReportedDrives,
  driver: (driverId: string, at: drivesV1.DriverSlot['driverTime']) => Uint8Array,
): Uint8Array[] {
  const json = page.resultsJson;
  const chunks: Uint8Array[] = [];
  let position = 0;
  for (const slot of page.driverSlots) {
    if (slot.offset < position || json[slot.offset] !== 0x30)
      throw new Error(`driver slot at ${slot.offset} is not a placeholder after ${position}`);
    chunks.push(json.subarray(position, slot.offset), driver(slot.driverId, slot.driverTime));
    position = slot.offset + 1;
  }
  chunks.push(json.subarray(position));
  return chunks;
}
