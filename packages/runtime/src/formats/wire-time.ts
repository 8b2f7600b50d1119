/**
 * Times across the gRPC hop. The generated code (ts-proto `useDate=false`) carries google.protobuf.Timestamp as
 * `{ seconds, nanos }`; these helpers turn it into the API's text (`2026-11-23T09:12:04.123Z`, what
 * `Date#toISOString` prints) and back, and PostgreSQL's timestamptz text into it, without a `Date` in between on the
 * hot paths. A page of drives carries six times per drive, and the string round trip of `useDate=string` (an ISO
 * string built from each row, parsed again to encode it; a `Date` built to print each decoded one) was a tenth of
 * both processes' time. Every result is byte for byte what the `Date` round trip gave; anything outside the fast
 * paths (years before 1970 or after 9999, other text forms) goes through `Date` itself.
 */

/** google.protobuf.Timestamp as the generated code carries it (structurally the generated `Timestamp`). */
export interface WireTimestamp {
  seconds: number;
  nanos: number;
}

const MS_PER_DAY = 86_400_000;
/** 9999-12-31T23:59:59.999Z: past it, toISOString prints a six-digit year. */
const MAX_FAST_MS = 253_402_300_799_999;

const TWO = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));
const THREE = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/** "YYYY-MM-DDT" per day since the epoch: a page's times fall on few days. */
const dayPrefixes = new Map<number, string>();

/** Milliseconds since the epoch, as ts-proto's `fromTimestamp` computed them (the same float steps, truncated). */
export function timestampToMillis(t: WireTimestamp): number {
  let millis = (t.seconds || 0) * 1_000;
  millis += (t.nanos || 0) / 1_000_000;
  return Math.trunc(millis);
}

/** The instant as `new Date(ms).toISOString()` prints it (throws RangeError for an invalid time, as that does). */
export function millisToIso(ms: number): string {
  if (!(ms >= 0 && ms <= MAX_FAST_MS) || !Number.isInteger(ms)) return new Date(ms).toISOString();
  const day = Math.floor(ms / MS_PER_DAY);
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    if (dayPrefixes.size >= 4096) dayPrefixes.clear();
    prefix = new Date(day * MS_PER_DAY).toISOString().slice(0, 11);
    dayPrefixes.set(day, prefix);
  }
  let rest = ms - day * MS_PER_DAY;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1_000);
  rest -= seconds * 1_000;
  return `${prefix}${TWO[hours]}:${TWO[minutes]}:${TWO[seconds]}.${THREE[rest]}Z`;
}

/** A wire Timestamp as the API prints times: what ts-proto's `useDate=string` decoding produced. */
export function timestampToIso(t: WireTimestamp): string {
  return millisToIso(timestampToMillis(t));
}

/**
 * A time of a gRPC reply as the API prints it (`2026-11-23T09:12:04.123Z`). An absent time stays absent (JSON leaves
 * the field out), as it did when the generated code decoded times to strings.
 */
export function apiTime(t: WireTimestamp | undefined): string {
  return (t === undefined ? undefined : timestampToIso(t)) as string;
}

/** A time the API prints as null when it is absent. */
export function apiTimeOrNull(t: WireTimestamp | undefined): string | null {
  return t ? timestampToIso(t) : null;
}

/** A wire Timestamp of whole milliseconds. */
export function millisToTimestamp(ms: number): WireTimestamp {
  const seconds = Math.trunc(ms / 1_000);
  return { seconds, nanos: (ms % 1_000) * 1_000_000 };
}

export function dateToTimestamp(date: Date): WireTimestamp {
  return millisToTimestamp(date.getTime());
}

export function timestampToDate(t: WireTimestamp): Date {
  return new Date(timestampToMillis(t));
}

const DIGIT_POSITIONS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];
const isDigit = (c: number) => c >= 48 && c <= 57;
const digits2 = (s: string, i: number) => (s.charCodeAt(i) - 48) * 10 + (s.charCodeAt(i + 1) - 48);

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/**
 * Milliseconds of `YYYY-MM-DD?HH:MM:SS[.f{1,3}]` followed by `tail` (years 1970-9999, a date and time that exist),
 * else undefined. `sep` is the character between date and time.
 */
function fastMillis(s: string, sep: number, tail: string): number | undefined {
  const n = s.length;
  if (n < 19 + tail.length || n > 23 + tail.length) return undefined;
  if (s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== sep) return undefined;
  if (s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58 || !s.endsWith(tail)) return undefined;
  // Indexed loops: an iterator here is an object a call (a million of them for an export).
  for (let k = 0; k < DIGIT_POSITIONS.length; k++) if (!isDigit(s.charCodeAt(DIGIT_POSITIONS[k]!))) return undefined;
  let ms = 0;
  const fracEnd = n - tail.length;
  if (fracEnd > 19) {
    if (s.charCodeAt(19) !== 46 || fracEnd === 20) return undefined;
    let scale = 100;
    for (let i = 20; i < fracEnd; i++) {
      const c = s.charCodeAt(i);
      if (!isDigit(c)) return undefined;
      ms += (c - 48) * scale;
      scale /= 10;
    }
  }
  const year = digits2(s, 0) * 100 + digits2(s, 2);
  const month = digits2(s, 5);
  const day = digits2(s, 8);
  const hour = digits2(s, 11);
  const minute = digits2(s, 14);
  const second = digits2(s, 17);
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  return daysFromCivil(year, month, day) * MS_PER_DAY + hour * 3_600_000 + minute * 60_000 + second * 1_000 + ms;
}

const T = 84;
const SPACE = 32;

/**
 * A date-time string as ts-proto's `useDate=string` encoding took it (`new Date(text)`, whole milliseconds); the
 * API's own form `2026-11-23T09:12:04.123Z` without a Date.
 */
export function isoToTimestamp(text: string): WireTimestamp {
  // (A string by its type; JSON read from the database is checked, and anything else goes to Date as it did.)
  const ms = typeof text === 'string' ? fastMillis(text, T, 'Z') : undefined;
  return millisToTimestamp(ms ?? new Date(text).getTime());
}

/**
 * PostgreSQL's timestamptz text in a UTC session (`2026-11-23 09:12:04.123+00`, fraction trimmed or absent) as a
 * wire Timestamp, else undefined (another zone, years before 1970, BC, infinity: parse those with pg's parser).
 */
export function pgUtcTextToTimestamp(text: string): WireTimestamp | undefined {
  const ms = fastMillis(text, SPACE, '+00');
  return ms === undefined ? undefined : millisToTimestamp(ms);
}
