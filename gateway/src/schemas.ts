import type { DriverSchema } from '@mileage/drive-json';
import type { usersV1 } from '@mileage/proto';

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

/**
 * The driver of a reported drive, from the Users service's profile (undefined: a user the service no longer has), with
 * the offset of the driver's time zone at the drive's end (`at`, epoch milliseconds).
 */
export function toDriverSchema(driverId: string, driver: usersV1.User | undefined, at: number): DriverSchema {
  return {
    id: driverId,
    name: driver
      ? (driver.displayName ??
        driver.name?.formatted ??
        ([driver.name?.givenName, driver.name?.familyName].filter(Boolean).join(' ') || null))
      : null,
    email: driver ? ((driver.emails.find((e) => e.primary) ?? driver.emails[0])?.value ?? driver.userName) : null,
    status: driver?.active ? 'active' : 'inactive',
    timezone_offset: timezoneOffsetHours(driver?.timezone ?? 'UTC', at),
  };
}
