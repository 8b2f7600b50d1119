import type { drivesV1, usersV1 } from '@mileage/proto';
import { timestampToIso, timestampToMillis, type WireTimestamp } from '@mileage/runtime';

/**
 * A time of the gRPC reply as the API prints it (`2026-11-23T09:12:04.123Z`). An absent time stays absent (JSON
 * leaves the field out), as it did when the generated code decoded times to strings.
 */
export function apiTime(t: WireTimestamp | undefined): string {
  return (t === undefined ? undefined : timestampToIso(t)) as string;
}

/** A time the API prints as null when it is absent. */
export function apiTimeOrNull(t: WireTimestamp | undefined): string | null {
  return t ? timestampToIso(t) : null;
}

/** The External API's UserSchema (field names as the reference API spells them). */
export interface UserSchema {
  id: string;
  userName: string;
  name: { givenName: string; familyName: string; formatted: string | null };
  emails: { value: string; type: string; primary: boolean }[];
  active: boolean;
  displayName: string | null;
}

export function toUserSchema(user: usersV1.User): UserSchema {
  return {
    id: user.id,
    userName: user.userName,
    name: {
      givenName: user.name?.givenName ?? '',
      familyName: user.name?.familyName ?? '',
      formatted: user.name?.formatted ?? null,
    },
    emails: user.emails.map((e) => ({ value: e.value, type: e.type, primary: e.primary })),
    active: user.active,
    displayName: user.displayName ?? null,
  };
}

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

export interface ReportedDriveSchema {
  id: string;
  driver: {
    id: string;
    name: string | null;
    email: string | null;
    status: 'active' | 'inactive';
    timezone_offset: number;
  };
  details: DriveDetails;
  created: string;
  modified: string;
  status: string;
  review_comments: { id: string; text: string; created_at: string; user_email: string }[];
}

const offsetFormats = new Map<string, Intl.DateTimeFormat>();
const offsetCache = new Map<string, number>();
const QUARTER_HOUR_MS = 900_000;

/**
 * Hours east of UTC of an IANA zone at an instant (e.g. -6 for America/Chicago in winter). Remembered per zone and
 * quarter hour (offsets change only at transitions, which fall on whole quarter hours of UTC): a page of drives
 * asks this for every drive, and Intl's formatToParts was a tenth of the gateway's time on a page.
 */
export function timezoneOffsetHours(timeZone: string, at: Date | number): number {
  const ms = typeof at === 'number' ? at : at.getTime();
  const key = `${timeZone} ${Math.floor(ms / QUARTER_HOUR_MS)}`;
  let offset = offsetCache.get(key);
  if (offset === undefined) {
    if (offsetCache.size >= 100_000) offsetCache.clear();
    offset = computeOffsetHours(timeZone, new Date(ms));
    offsetCache.set(key, offset);
  }
  return offset;
}

function computeOffsetHours(timeZone: string, at: Date): number {
  let format = offsetFormats.get(timeZone);
  if (!format) {
    try {
      format = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
    } catch {
      return 0;
    }
    offsetFormats.set(timeZone, format);
  }
  const name = format.formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT';
  const m = /GMT([+-])(\d{2}):(\d{2})/.exec(name);
  return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) + Number(m[3]) / 60) : 0;
}

export function toReportedDriveSchema(
  r: drivesV1.ReportedDrive,
  driver: usersV1.User | undefined,
): ReportedDriveSchema {
  const d = r.drive!;
  const email = driver ? ((driver.emails.find((e) => e.primary) ?? driver.emails[0])?.value ?? driver.userName) : null;
  return {
    id: String(d.id),
    driver: {
      id: d.userId,
      name: driver
        ? (driver.displayName ??
          driver.name?.formatted ??
          ([driver.name?.givenName, driver.name?.familyName].filter(Boolean).join(' ') || null))
        : null,
      email,
      status: driver?.active ? 'active' : 'inactive',
      timezone_offset: timezoneOffsetHours(driver?.timezone ?? 'UTC', timestampToMillis(d.endTime!)),
    },
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

export function toDriveTombstoneSchema(t: drivesV1.Tombstone): DriveTombstoneSchema {
  return { drive_id: t.driveId, deleted: true, modified: apiTime(t.deleteTime) };
}

export function toReportedDriveTombstoneSchema(t: drivesV1.Tombstone): ReportedDriveTombstoneSchema {
  return { id: String(t.driveId), deleted: true, modified: apiTime(t.deleteTime) };
}
