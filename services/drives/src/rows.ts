import { drivesV1 } from '@mileage/proto';
import { isoToTimestamp, timestampToIso, timestampToMillis } from '@mileage/runtime/formats';
import { type Stamp, wire } from './stamps';

export const iso = (t: Stamp): string => (t instanceof Date ? t.toISOString() : timestampToIso(t));
export const millis = (t: Stamp): number => (t instanceof Date ? t.getTime() : timestampToMillis(t));

/** A row of `drives`, as pg returns it. */
export interface DriveRow {
  id: string;
  organization_id: string;
  user_id: string;
  started_at: Stamp;
  ended_at: Stamp;
  distance_amount: string | null;
  distance_units: string | null;
  distance_discounted: string | null;
  value_amount: string | null;
  value_currency: string | null;
  toll_amount: string | null;
  toll_currency: string | null;
  parking_amount: string | null;
  parking_currency: string | null;
  description: string | null;
  entry: string;
  classification: string | null;
  purpose: string | null;
  start_location: StoredLocation | null;
  end_location: StoredLocation | null;
  created_at: Stamp;
  modified_at: Stamp;
}

/** The report's columns of a row of `drive_reports` joined to its drive. */
export interface ReportRow {
  drive_id: string;
  group_id: string;
  status: string;
  reported_at: Stamp;
  report_modified_at: Stamp;
}

/** A row of `review_comments`. */
export interface CommentRow {
  id: string;
  drive_id: string;
  text: string;
  user_email: string;
  created_at: Stamp;
}

export interface StoredLocation {
  name: string;
  lat: string | null;
  lon: string | null;
  time: string;
  address: drivesV1.Address | null;
}

export const DRIVE_COLUMNS = [
  'id',
  'organization_id',
  'user_id',
  'started_at',
  'ended_at',
  'distance_amount',
  'distance_units',
  'distance_discounted',
  'value_amount',
  'value_currency',
  'toll_amount',
  'toll_currency',
  'parking_amount',
  'parking_currency',
  'description',
  'entry',
  'classification',
  'purpose',
  'start_location',
  'end_location',
  'created_at',
  'modified_at',
] as const;

const CLASSIFICATIONS: Record<string, drivesV1.Classification> = {
  business: drivesV1.Classification.CLASSIFICATION_BUSINESS,
  personal: drivesV1.Classification.CLASSIFICATION_PERSONAL,
  unclassified: drivesV1.Classification.CLASSIFICATION_UNCLASSIFIED,
};

export function classificationName(c: drivesV1.Classification): string | null {
  return Object.entries(CLASSIFICATIONS).find(([, v]) => v === c)?.[0] ?? null;
}

function money(amount: string | null, currency: string | null): drivesV1.Money | undefined {
  return amount !== null && currency !== null ? { amount: Number(amount), currency } : undefined;
}

function location(stored: StoredLocation | null): drivesV1.Geolocation | undefined {
  if (!stored) return undefined;
  return {
    name: stored.name,
    ...(stored.lat !== null ? { lat: stored.lat } : {}),
    ...(stored.lon !== null ? { lon: stored.lon } : {}),
    // Stored as the API's text (what the gateway sent); read as ts-proto's string encoding did (`new Date(text)`).
    ...(stored.time !== undefined ? { time: isoToTimestamp(stored.time) } : {}),
    ...(stored.address ? { address: stored.address } : {}),
  };
}

export function toDrive(row: DriveRow): drivesV1.Drive {
  return {
    id: Number(row.id),
    organizationId: Number(row.organization_id),
    userId: row.user_id,
    createTime: wire(row.created_at),
    updateTime: wire(row.modified_at),
    startTime: wire(row.started_at),
    endTime: wire(row.ended_at),
    classification: row.classification
      ? CLASSIFICATIONS[row.classification]!
      : drivesV1.Classification.CLASSIFICATION_UNSPECIFIED,
    ...(row.distance_amount !== null && row.distance_units !== null
      ? {
          distance: {
            amount: Number(row.distance_amount),
            units: row.distance_units,
            ...(row.distance_discounted !== null ? { discounted: Number(row.distance_discounted) } : {}),
          },
        }
      : {}),
    ...optional('value', money(row.value_amount, row.value_currency)),
    ...optional('tollFees', money(row.toll_amount, row.toll_currency)),
    ...optional('parkingFees', money(row.parking_amount, row.parking_currency)),
    ...(row.description !== null ? { description: row.description } : {}),
    entry: row.entry === 'manual' ? drivesV1.Entry.ENTRY_MANUAL : drivesV1.Entry.ENTRY_AUTOMATIC,
    ...(row.purpose !== null ? { purpose: row.purpose } : {}),
    ...optional('start', location(row.start_location)),
    ...optional('end', location(row.end_location)),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function storeLocation(g: drivesV1.Geolocation | undefined): string | null {
  if (!g) return null;
  return JSON.stringify({
    name: g.name,
    lat: g.lat ?? null,
    lon: g.lon ?? null,
    time: g.time && timestampToIso(g.time),
    address: g.address ?? null,
  });
}

/** The writable columns of a drive. */
export function toColumns(d: drivesV1.Drive) {
  return {
    user_id: d.userId,
    started_at: d.startTime && timestampToIso(d.startTime),
    ended_at: d.endTime && timestampToIso(d.endTime),
    distance_amount: d.distance?.amount ?? null,
    distance_units: d.distance?.units ?? null,
    distance_discounted: d.distance?.discounted ?? null,
    value_amount: d.value?.amount ?? null,
    value_currency: d.value?.currency ?? null,
    toll_amount: d.tollFees?.amount ?? null,
    toll_currency: d.tollFees?.currency ?? null,
    parking_amount: d.parkingFees?.amount ?? null,
    parking_currency: d.parkingFees?.currency ?? null,
    description: d.description ?? null,
    entry: d.entry === drivesV1.Entry.ENTRY_MANUAL ? 'manual' : 'automatic',
    classification: classificationName(d.classification),
    purpose: d.purpose ?? null,
    start_location: storeLocation(d.start),
    end_location: storeLocation(d.end),
  };
}

/** A reported drive with its review comments, as the message. */
export function toReported(row: DriveRow & ReportRow, comments: CommentRow[]): drivesV1.ReportedDrive {
  return {
    drive: toDrive(row),
    groupId: Number(row.group_id),
    status: row.status,
    reportTime: wire(row.reported_at),
    updateTime: wire(row.report_modified_at),
    reviewComments: comments.map((c) => ({
      id: Number(c.id),
      text: c.text,
      createTime: wire(c.created_at),
      userEmail: c.user_email,
    })),
  };
}
