// A reported drive of an organization export as its JSON line and its CSV line, from the columns of its COPY row.
// Loaded by the export's worker thread (export-pages.ts): no generated messages, no gRPC.
import { apiTime, isoToTimestamp } from '@mileage/runtime/worker';
import { csvLine } from './csv';
import { place, reviewCommentOf } from './representation';
import type { CommentRow, StoredLocation } from './rows';
import { wireFromText } from './stamps';

/**
 * A reported drive's columns in an organization export, in the order its COPY sends them (exportedDriveLines reads
 * them by position): what the export's lines hold, nothing more. The drive id first: a page's keys (its position, its
 * comments) are read without decoding its rows (CopiedRows.first).
 */
export const EXPORT_COLUMNS = [
  'd.id',
  'd.user_id',
  'r.status',
  'r.reported_at',
  'r.modified_at',
  'd.distance_amount',
  'd.distance_units',
  'd.distance_discounted',
  'd.value_amount',
  'd.value_currency',
  'd.toll_amount',
  'd.toll_currency',
  'd.parking_amount',
  'd.parking_currency',
  'd.description',
  'd.entry',
  'd.classification',
  'd.purpose',
  'd.start_location',
  'd.end_location',
] as const;

/** Where each of `names` is in a row of a COPY of `columns`, in the order of `names`. */
const positionsIn =
  <C extends string>(columns: readonly C[]) =>
  <const N extends readonly C[]>(...names: N) =>
    names.map((name) => columns.indexOf(name)) as { [K in keyof N]: number };

/** Where each of EXPORT_COLUMNS is in a row of the export's COPY. */
const columnsAt = positionsIn(EXPORT_COLUMNS);
export const [ID, USER, STATUS, REPORTED, MODIFIED] = columnsAt(
  'd.id',
  'd.user_id',
  'r.status',
  'r.reported_at',
  'r.modified_at',
);
export const [DISTANCE, UNITS, DISCOUNTED] = columnsAt(
  'd.distance_amount',
  'd.distance_units',
  'd.distance_discounted',
);
export const [VALUE, VALUE_CURRENCY, TOLL, TOLL_CURRENCY] = columnsAt(
  'd.value_amount',
  'd.value_currency',
  'd.toll_amount',
  'd.toll_currency',
);
export const [PARKING, PARKING_CURRENCY, DESCRIPTION, ENTRY] = columnsAt(
  'd.parking_amount',
  'd.parking_currency',
  'd.description',
  'd.entry',
);
export const [CLASSIFICATION, PURPOSE, START, END] = columnsAt(
  'd.classification',
  'd.purpose',
  'd.start_location',
  'd.end_location',
);

/**
 * A review comment's columns in an organization export, in the order its COPY sends them (EXPORT_COMMENTS_SQL): the
 * drive id first, so that a page's comments are matched to its drives without decoding them (CopiedRows.firstInteger).
 */
export const EXPORT_COMMENT_COLUMNS = ['drive_id', 'id', 'text', 'user_email', 'created_at'] as const;
export const [COMMENT_DRIVE, COMMENT_ID, COMMENT_TEXT, COMMENT_EMAIL, COMMENT_CREATED] = positionsIn(
  EXPORT_COMMENT_COLUMNS,
)('drive_id', 'id', 'text', 'user_email', 'created_at');

/** A review comment's COPY row (EXPORT_COMMENT_COLUMNS, copyTextFields) as the statements' readers give it. */
export const commentOfFields = (fields: readonly (string | null)[]): CommentRow => ({
  id: fields[COMMENT_ID]!,
  drive_id: fields[COMMENT_DRIVE]!,
  text: fields[COMMENT_TEXT]!,
  user_email: fields[COMMENT_EMAIL]!,
  created_at: wireFromText(fields[COMMENT_CREATED]!),
});

const json = JSON.stringify;
/** A numeric column's text as JSON does the Number the API holds (a number that is not finite is null). */
export function numberJson(text: string): string {
  const n = Number(text);
  return Number.isFinite(n) ? String(n) : 'null';
}
const moneyJson = (amount: string | null, currency: string | null) =>
  amount !== null && currency !== null ? `{"amount":${numberJson(amount)},"currency":${json(currency)}}` : 'null';

/** A drive's review comments in its JSON line: the API's representation of each. */
export const reviewCommentsJson = (comments: readonly CommentRow[]): string =>
  comments.length ? json(comments.map(reviewCommentOf)) : '[]';
/** A drive's review comments in its CSV line: their texts in one field (before the CSV's quoting). */
export const reviewCommentsText = (comments: readonly CommentRow[]): string => comments.map((c) => c.text).join(' | ');

/** The headers of the export's CSV, in the order of exportedDriveLines's fields. */
export const EXPORT_CSV_COLUMNS = [
  'id',
  'driver_id',
  'status',
  'reported_at',
  'modified',
  'started_at',
  'ended_at',
  'classification',
  'purpose',
  'description',
  'distance',
  'distance_units',
  'value',
  'toll_fees',
  'parking_fees',
  'currency',
  'start',
  'end',
  'review_comments',
] as const;

/**
 * A reported drive of an organization export as its two lines, from the columns of its COPY row (EXPORT_COLUMNS,
 * copyTextFields): the JSON line is the API's ReportedDriveSchema with the driver as `{"id"}` (the Users part
 * describes the driver), the CSV line its columns for spreadsheets. Written as text, field by field, without the
 * objects reportedDriveItemOf builds for the API's pages: an export renders every drive of an organization, and the
 * objects and their garbage were most of its cost. The same fields by the same conversions (place, reviewCommentOf,
 * the same times), so the same bytes: export-part.test.ts holds every line to reportedDriveItemOf's over generated
 * rows.
 */
export function exportedDriveLines(
  row: readonly (string | null)[],
  comments: CommentRow[],
): { json: string; csv: string } {
  // NOT NULL columns (the drive's and the report's own), then those that may be NULL.
  const [id, driver, status] = [String(Number(row[ID])), row[USER]!, row[STATUS]!];
  const created = apiTime(wireFromText(row[REPORTED]!));
  const modified = apiTime(wireFromText(row[MODIFIED]!));
  const nullable = (i: number): string | null => row[i] ?? null;
  const [distance, units, discounted] = [nullable(DISTANCE), nullable(UNITS), nullable(DISCOUNTED)];
  const [value, valueCurrency] = [nullable(VALUE), nullable(VALUE_CURRENCY)];
  const [toll, tollCurrency] = [nullable(TOLL), nullable(TOLL_CURRENCY)];
  const [parking, parkingCurrency] = [nullable(PARKING), nullable(PARKING_CURRENCY)];
  const [description, classification, purpose] = [nullable(DESCRIPTION), nullable(CLASSIFICATION), nullable(PURPOSE)];
  const start = placeOfText(nullable(START));
  const end = placeOfText(nullable(END));
  const line =
    `{"id":"${id}","driver":{"id":${json(driver)}},"details":{"distance":` +
    (distance !== null && units !== null
      ? `{"amount":${numberJson(distance)},"units":${json(units)},"discounted":${discounted === null ? 'null' : numberJson(discounted)}}`
      : 'null') +
    `,"value":${moneyJson(value, valueCurrency)},"toll_fees":${moneyJson(toll, tollCurrency)}` +
    `,"parking_fees":${moneyJson(parking, parkingCurrency)},"description":${json(description)}` +
    `,"entry":${row[ENTRY] === 'manual' ? '"manual"' : '"automatic"'},"classification":${json(classification)}` +
    `,"purpose":${json(purpose)},"start":${start.json},"end":${end.json}},"created":"${created}"` +
    `,"modified":"${modified}","status":${json(status)},"review_comments":${reviewCommentsJson(comments)}}\n`;
  const amount = (text: string | null, currency: string | null) =>
    text !== null && currency !== null ? Number(text) : '';
  const csv = csvLine([
    id,
    driver,
    status,
    created,
    modified,
    start.time,
    end.time,
    classification ?? '',
    purpose ?? '',
    description ?? '',
    distance !== null && units !== null ? Number(distance) : '',
    distance !== null && units !== null ? units : '',
    amount(value, valueCurrency),
    amount(toll, tollCurrency),
    amount(parking, parkingCurrency),
    (value !== null ? valueCurrency : null) ??
      (toll !== null ? tollCurrency : null) ??
      (parking !== null ? parkingCurrency : null) ??
      '',
    start.name,
    end.name,
    reviewCommentsText(comments),
  ]);
  return { json: line, csv };
}

/** A location as an export writes it: its JSON (place's), and its name and time for the CSV ('' when absent). */
export interface PlaceText {
  json: string;
  name: string;
  time: string;
}
const NO_PLACE: PlaceText = { json: 'null', name: '', time: '' };

/**
 * A stored location's jsonb text (as COPY prints it) as place() renders it. Read by scanning, not parsed: jsonb's
 * strings are JSON already, escaped as JSON.stringify escapes them, so each value is copied as it is; a location
 * holding anything else than strings and nulls (or an address object of them) is parsed and rendered by place(),
 * which gives the same text. Parsing and re-serialising the two locations were close to half of a drive's rendering.
 */
export function placeOfText(text: string | null): PlaceText {
  if (text === null) return NO_PLACE;
  const scanned = scanMembers(text, 0, true);
  if (scanned) {
    let name: string | undefined;
    let lat = 'null';
    let lon = 'null';
    let time: string | undefined;
    let address = 'null';
    let plain = true;
    for (const [key, value] of scanned.members) {
      if (key === 'address') {
        if (typeof value !== 'string') address = addressJson(value);
        else if (value !== 'null') plain = false;
      } else if (typeof value !== 'string') plain = false;
      else if (key === 'name') name = value;
      else if (key === 'lat') lat = value;
      else if (key === 'lon') lon = value;
      else if (key === 'time') time = value;
    }
    // A time that is not a plain string (null, escapes) goes the way place() takes it.
    if (plain && scanned.end === text.length && (time === undefined || isPlainString(time))) {
      const apiText = time === undefined ? undefined : apiTime(isoToTimestamp(time.slice(1, -1)));
      let json = name === undefined ? '{' : `{"name":${name},`;
      json += `"lat":${lat},"lon":${lon}`;
      if (apiText !== undefined) json += `,"time":"${apiText}"`;
      json += `,"address":${address}}`;
      return { json, name: name === undefined || name === 'null' ? '' : stringOf(name), time: apiText ?? '' };
    }
  }
  const parsed = place(JSON.parse(text) as StoredLocation);
  return { json: json(parsed), name: parsed?.name ?? '', time: parsed?.time ?? '' };
}

/** The address's keys as they are stored, and as the API names them (place()'s), in the API's order. */
export const ADDRESS_KEYS = [
  ['country', 'country'],
  ['state', 'state'],
  ['city', 'city'],
  ['street', 'street'],
  ['postalCode', 'postal_code'],
] as const;

function addressJson(members: [string, string | Members][]): string {
  let out = '';
  for (const [stored, api] of ADDRESS_KEYS) {
    const member = members.find(([key]) => key === stored);
    // One level of objects only (scanMembers): an address's values are strings or nulls.
    if (member) out += `${out ? ',' : ''}"${api}":${member[1] as string}`;
  }
  return `{${out}}`;
}

const isPlainString = (raw: string) => raw.charCodeAt(0) === 34 && !raw.includes('\\');
/** A JSON string's value: its text between the quotes, unless it holds an escape. */
const stringOf = (raw: string) => (raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1));

type Members = [string, string | Members][];

/**
 * The members of the object jsonb prints at `text[at]` (`{"key": value, ...}`, keys without escapes): each value's
 * JSON text when it is a string or null, its members when it is an object (one level down, if `nesting`); undefined
 * for anything else (a number, an array, another spacing), which the caller parses instead.
 */
function scanMembers(text: string, at: number, nesting: boolean): { members: Members; end: number } | undefined {
  if (text.charCodeAt(at) !== 123) return undefined;
  let pos = at + 1;
  const members: Members = [];
  if (text.charCodeAt(pos) === 125) return { members, end: pos + 1 };
  for (;;) {
    if (text.charCodeAt(pos) !== 34) return undefined;
    const keyEnd = text.indexOf('"', pos + 1);
    if (keyEnd < 0) return undefined;
    const key = text.slice(pos + 1, keyEnd);
    if (key.includes('\\') || text.charCodeAt(keyEnd + 1) !== 58 || text.charCodeAt(keyEnd + 2) !== 32)
      return undefined;
    pos = keyEnd + 3;
    const first = text.charCodeAt(pos);
    if (first === 34) {
      let end = text.indexOf('"', pos + 1);
      while (end > 0 && escaped(text, end)) end = text.indexOf('"', end + 1);
      if (end < 0) return undefined;
      members.push([key, text.slice(pos, end + 1)]);
      pos = end + 1;
    } else if (first === 110 && text.startsWith('null', pos)) {
      members.push([key, 'null']);
      pos += 4;
    } else if (first === 123 && nesting) {
      const inner = scanMembers(text, pos, false);
      if (!inner) return undefined;
      members.push([key, inner.members]);
      pos = inner.end;
    } else return undefined;
    const next = text.charCodeAt(pos);
    if (next === 125) return { members, end: pos + 1 };
    if (next !== 44 || text.charCodeAt(pos + 1) !== 32) return undefined;
    pos += 2;
  }
}

/** Whether the quote at `text[at]` is escaped: an odd number of backslashes before it. */
function escaped(text: string, at: number): boolean {
  let count = 0;
  while (text.charCodeAt(at - 1 - count) === 92) count++;
  return count % 2 === 1;
}
