/**
 * RFC 3339 date-times as clients send them, checked for real before they reach PostgreSQL: a calendar date that
 * exists (no 30 February, no hour 24), a UTC offset that exists, and an instant PostgreSQL's timestamptz stores
 * (years 0001-9999 after conversion to UTC; JavaScript's year 0 is 1 BC, which PostgreSQL refuses). `Date.parse`
 * alone shifts impossible dates silently and lets years PostgreSQL cannot store through as 500s.
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

export type TimestampCheck = { iso: string } | { problem: string };

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** The instant as an ISO string in UTC with milliseconds, or why the value is not one. */
export function parseRfc3339(value: string): TimestampCheck {
  const m = RFC3339.exec(value);
  if (!m) return { problem: 'not an RFC 3339 date-time with a time zone (e.g. 2026-01-31T09:30:00Z)' };
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return { problem: 'no such calendar date' };
  if (hour > 23 || minute > 59 || second > 59) return { problem: 'no such time of day' };
  if (m[8] && (Number(m[9]) > 23 || Number(m[10]) > 59)) return { problem: 'no such UTC offset' };
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return { problem: 'not an RFC 3339 date-time with a time zone (e.g. 2026-01-31T09:30:00Z)' };
  const utcYear = new Date(ms).getUTCFullYear();
  if (utcYear < 1 || utcYear > 9999) return { problem: 'outside the years 0001-9999 (UTC) that can be stored' };
  return { iso: new Date(ms).toISOString() };
}
