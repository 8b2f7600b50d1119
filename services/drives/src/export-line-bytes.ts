// A reported drive's two export lines written as bytes: from its COPY row's bytes straight into the pages' buffers,
// without a string or an object per field. The same lines as exportedDriveLines (export-lines.ts), which renders any
// row this does not take, and any field outside its forms: export-line-bytes.test.ts holds the two renderers equal over
// random rows, export-part.test.ts the part's lines to the API's representation.
import { apiTime, COPY_ESCAPES, copyTextFields, type PageBytes, writeFastApiTime } from '@mileage/runtime/worker';
import { CSV_QUOTED_CHARACTERS, csvField } from './csv';
import {
  ADDRESS_KEYS,
  CLASSIFICATION,
  DESCRIPTION,
  DISCOUNTED,
  DISTANCE,
  END,
  ENTRY,
  EXPORT_COLUMNS,
  EXPORT_CSV_COLUMNS,
  ID,
  MODIFIED,
  numberJson,
  PARKING,
  PARKING_CURRENCY,
  placeOfText,
  type PlaceText,
  PURPOSE,
  REPORTED,
  START,
  STATUS,
  TOLL,
  TOLL_CURRENCY,
  UNITS,
  USER,
  VALUE,
  VALUE_CURRENCY,
} from './export-lines';
import { reviewCommentOf } from './representation';
import type { CommentRow } from './rows';
import { wireFromText } from './stamps';

const FIELDS = EXPORT_COLUMNS.length;
// The current row's fields: where each starts and ends in the row's bytes, and whether it holds a COPY escape.
const starts = new Int32Array(FIELDS);
const ends = new Int32Array(FIELDS);
const escaped = new Uint8Array(FIELDS);

const bytesOf = (text: string) => new Uint8Array(Buffer.from(text));
const L = {
  id: bytesOf('{"id":"'),
  driver: bytesOf('","driver":{"id":'),
  distance: bytesOf('},"details":{"distance":'),
  amount: bytesOf('{"amount":'),
  units: bytesOf(',"units":'),
  discounted: bytesOf(',"discounted":'),
  currency: bytesOf(',"currency":'),
  value: bytesOf(',"value":'),
  toll: bytesOf(',"toll_fees":'),
  parking: bytesOf(',"parking_fees":'),
  description: bytesOf(',"description":'),
  manual: bytesOf(',"entry":"manual","classification":'),
  automatic: bytesOf(',"entry":"automatic","classification":'),
  purpose: bytesOf(',"purpose":'),
  start: bytesOf(',"start":'),
  end: bytesOf(',"end":'),
  created: bytesOf('},"created":"'),
  modified: bytesOf('","modified":"'),
  status: bytesOf('","status":'),
  comments: bytesOf(',"review_comments":'),
  noComments: bytesOf(',"review_comments":[]}\n'),
  null: bytesOf('null'),
  name: bytesOf('{"name":'),
  lat: bytesOf('"lat":'),
  lon: bytesOf(',"lon":'),
  time: bytesOf(',"time":"'),
  address: bytesOf(',"address":'),
  manualText: bytesOf('manual'),
};
/** The address's keys as they are stored, and as the API's member names (ADDRESS_KEYS). */
const ADDRESS = ADDRESS_KEYS.map(([stored, api]) => [bytesOf(stored), bytesOf(`"${api}":`)] as const);
const KEY = { name: bytesOf('name'), lat: bytesOf('lat'), lon: bytesOf('lon'), time: bytesOf('time') };
const ADDRESS_KEY = bytesOf('address');

/** The byte a COPY escape `\x` stands for (COPY_ESCAPES): x itself unless named. */
const UNESCAPED = new Uint8Array(256).map((_, i) => i);
for (const [letter, text] of Object.entries(COPY_ESCAPES)) UNESCAPED[letter.charCodeAt(0)] = text.charCodeAt(0);
/** The bytes that make a CSV field quoted (CSV_QUOTED_CHARACTERS, csvField's rule). */
const CSV_QUOTED = new Uint8Array(256);
for (const c of CSV_QUOTED_CHARACTERS) CSV_QUOTED[c.charCodeAt(0)] = 1;
/** JSON.stringify's short escapes of control characters; the others are \u00xx. */
const SHORT_ESCAPES = new Uint8Array(32);
for (const [byte, letter] of [
  [8, 'b'],
  [9, 't'],
  [10, 'n'],
  [12, 'f'],
  [13, 'r'],
] as const)
  SHORT_ESCAPES[byte] = letter.charCodeAt(0);
const HEX = bytesOf('0123456789abcdef');

const isDigit = (c: number) => c >= 48 && c <= 57;

function put(out: Buffer, p: number, bytes: Uint8Array): number {
  for (let k = 0; k < bytes.length; k++) out[p++] = bytes[k]!;
  return p;
}

/** `text` written at out[p]; an empty one (a location's absent name or time) without Buffer.write's call into C++. */
const putText = (out: Buffer, p: number, text: string): number => (text ? p + out.write(text, p) : p);

/** Whether the bytes src[s..e) are `bytes`. */
function same(src: Buffer, s: number, e: number, bytes: Uint8Array): boolean {
  if (e - s !== bytes.length) return false;
  for (let k = 0; k < bytes.length; k++) if (src[s + k] !== bytes[k]) return false;
  return true;
}

/** Splits the row src[start..end) at its tabs (a tab in a value is escaped); false unless it has FIELDS fields. */
function split(src: Buffer, start: number, end: number): boolean {
  let f = 0;
  starts[0] = start;
  escaped[0] = 0;
  for (let i = start; i < end; i++) {
    const c = src[i]!;
    if (c === 9) {
      ends[f] = i;
      if (++f === FIELDS) return false;
      starts[f] = i + 1;
      escaped[f] = 0;
    } else if (c === 92) {
      escaped[f] = 1;
      i++;
    }
  }
  ends[f] = end;
  return f === FIELDS - 1;
}

const isNull = (src: Buffer, f: number) =>
  escaped[f] === 1 && ends[f]! - starts[f]! === 2 && src[starts[f]!] === 92 && src[starts[f]! + 1] === 78;

/** Field f's text, its escapes read (copyTextFields): for the renderings that go through a string. */
const fieldText = (src: Buffer, f: number): string => copyTextFields(src.toString('utf8', starts[f], ends[f]))[0]!;

/** Field f as JSON.stringify writes its text: quoted, `"`, `\` and control characters escaped. */
function jsonString(src: Buffer, f: number, out: Buffer, p: number): number {
  out[p++] = 34;
  for (let i = starts[f]!, e = ends[f]!; i < e; i++) {
    let c = src[i]!;
    if (c === 92) c = UNESCAPED[src[++i]!]!;
    if (c >= 32 && c !== 34 && c !== 92) {
      out[p++] = c;
      continue;
    }
    out[p++] = 92;
    if (c >= 32) out[p++] = c;
    else if (SHORT_ESCAPES[c]) out[p++] = SHORT_ESCAPES[c]!;
    else {
      out[p++] = 117;
      out[p++] = 48;
      out[p++] = 48;
      out[p++] = HEX[c >> 4]!;
      out[p++] = HEX[c & 15]!;
    }
  }
  out[p++] = 34;
  return p;
}

const jsonStringOrNull = (src: Buffer, f: number, out: Buffer, p: number) =>
  isNull(src, f) ? put(out, p, L.null) : jsonString(src, f, out, p);

/** src[s..e) (COPY escapes read when `copyEscapes`) as a CSV field (csvField): quoted when it holds , " CR or LF. */
function csvBytes(src: Buffer, s: number, e: number, copyEscapes: boolean, out: Buffer, p: number): number {
  let quoted = false;
  for (let i = s; i < e; i++) {
    let c = src[i]!;
    if (c === 92 && copyEscapes) c = UNESCAPED[src[++i]!]!;
    if (CSV_QUOTED[c]) {
      quoted = true;
      break;
    }
  }
  if (quoted) out[p++] = 34;
  for (let i = s; i < e; i++) {
    let c = src[i]!;
    if (c === 92 && copyEscapes) c = UNESCAPED[src[++i]!]!;
    out[p++] = c;
    if (c === 34) out[p++] = 34;
  }
  if (quoted) out[p++] = 34;
  return p;
}

const csvString = (src: Buffer, f: number, out: Buffer, p: number) =>
  isNull(src, f) ? p : csvBytes(src, starts[f]!, ends[f]!, escaped[f] === 1, out, p);

/**
 * A numeric or bigint column's text as JavaScript prints its Number (String(Number(text))), for the forms where that
 * is the text itself without trailing fraction zeros: at most 15 significant digits (a double holds them exactly and
 * prints them shortest), not below 1e-6 nor from 1e21 (printed with an exponent). -1 for any other text.
 */
function numberBytes(src: Buffer, f: number, out: Buffer, p: number): number {
  const s = starts[f]!;
  const e = ends[f]!;
  const negative = src[s] === 45;
  const intStart = negative ? s + 1 : s;
  let i = intStart;
  while (i < e && isDigit(src[i]!)) i++;
  const intEnd = i;
  if (intEnd === intStart || (src[intStart] === 48 && intEnd - intStart > 1)) return -1;
  let fracStart = e;
  let fracEnd = e;
  if (i < e) {
    if (src[i] !== 46) return -1;
    fracStart = i + 1;
    for (i = fracStart; i < e; i++) if (!isDigit(src[i]!)) return -1;
    if (fracStart === e) return -1;
    while (fracEnd > fracStart && src[fracEnd - 1] === 48) fracEnd--;
  }
  let significant: number;
  if (src[intStart] === 48) {
    // 0, -0 and 0.00 print 0.
    if (fracEnd === fracStart) {
      out[p++] = 48;
      return p;
    }
    let first = fracStart;
    while (src[first] === 48) first++;
    if (first - fracStart > 5) return -1;
    significant = fracEnd - first;
  } else {
    if (intEnd - intStart > 21) return -1;
    let last = intEnd;
    if (fracEnd === fracStart) while (src[last - 1] === 48) last--;
    significant = last - intStart + (fracEnd - fracStart);
  }
  if (significant > 15) return -1;
  if (negative) out[p++] = 45;
  for (let k = intStart; k < intEnd; k++) out[p++] = src[k]!;
  if (fracEnd > fracStart) {
    out[p++] = 46;
    for (let k = fracStart; k < fracEnd; k++) out[p++] = src[k]!;
  }
  return p;
}

/** A number field as JSON (numberJson); `csv`: as the CSV prints Number(text) (NaN too). */
function numberField(src: Buffer, f: number, out: Buffer, p: number, csv: boolean): number {
  const q = numberBytes(src, f, out, p);
  if (q >= 0) return q;
  const text = fieldText(src, f);
  return putText(out, p, csv ? String(Number(text)) : numberJson(text));
}

/** The drive id as String(Number(text)): digits up to 15 as they are. */
function idField(src: Buffer, out: Buffer, p: number): number {
  const s = starts[ID]!;
  const e = ends[ID]!;
  if (e - s > 15 || e === s || (src[s] === 48 && e - s > 1)) return putText(out, p, String(Number(fieldText(src, ID))));
  for (let i = s; i < e; i++) {
    if (!isDigit(src[i]!)) return putText(out, p, String(Number(fieldText(src, ID))));
    out[p++] = src[i]!;
  }
  return p;
}

/** A timestamptz column (PostgreSQL's UTC text) as the API prints it: apiTime(wireFromText(text)). */
function pgTime(src: Buffer, f: number, out: Buffer, p: number): number {
  const q = writeFastApiTime(src, starts[f]!, ends[f]!, 32, '+00', out, p);
  return q >= 0 ? q : putText(out, p, apiTime(wireFromText(fieldText(src, f))));
}

/**
 * A stored location read from its jsonb text (COPY's, without escapes): where its members' values are in the row.
 * Each is -1 when absent; a value's range includes its quotes, and `null` is its own text.
 */
interface Scanned {
  name: [number, number];
  lat: [number, number];
  lon: [number, number];
  time: [number, number];
  /** 1 for an address object, 0 for none or null. */
  address: number;
  /** Each address key's value range, in ADDRESS's order. */
  addressValues: [number, number][];
}
const scannedStart: Scanned = newScanned();
const scannedEnd: Scanned = newScanned();
function newScanned(): Scanned {
  return {
    name: [-1, -1],
    lat: [-1, -1],
    lon: [-1, -1],
    time: [-1, -1],
    address: 0,
    addressValues: ADDRESS.map(() => [-1, -1] as [number, number]),
  };
}

/**
 * The value at src[i] of a jsonb object as jsonb prints it: a string (no backslash in the field, so no escape) or
 * null; its end, or -1 for any other value.
 */
function scalarEnd(src: Buffer, i: number, e: number): number {
  if (src[i] === 34) {
    for (let k = i + 1; k < e; k++) if (src[k] === 34) return k + 1;
    return -1;
  }
  return src[i] === 110 && src[i + 1] === 117 && src[i + 2] === 108 && src[i + 3] === 108 ? i + 4 : -1;
}

/** The range to note a location's member in, by its key (src[ks..ke)); undefined for a key place() does not read. */
function memberRange(src: Buffer, ks: number, ke: number, into: Scanned): [number, number] | undefined {
  if (same(src, ks, ke, KEY.name)) return into.name;
  if (same(src, ks, ke, KEY.lat)) return into.lat;
  if (same(src, ks, ke, KEY.lon)) return into.lon;
  if (same(src, ks, ke, KEY.time)) return into.time;
  return undefined;
}

/**
 * A key of a jsonb object at src[i] as jsonb prints it (`"key": `): the offset of its closing quote, or -1. Its
 * value starts 3 bytes after.
 */
function keyEnd(src: Buffer, i: number, e: number): number {
  if (src[i] !== 34) return -1;
  const ke = scalarEnd(src, i, e) - 1;
  return ke < 0 || src[ke + 1] !== 58 || src[ke + 2] !== 32 ? -1 : ke;
}

/** After a member's value (at src[ve]): the next member's start, the object's end as -(end + 1), or undefined. */
function nextMember(src: Buffer, ve: number): number | undefined {
  if (src[ve] === 125) return -(ve + 2);
  return src[ve] === 44 && src[ve + 1] === 32 ? ve + 2 : undefined;
}

/** The address object at src[i] (strings and nulls only), its values noted in `into`; its end, or -1. */
function scanAddress(src: Buffer, i: number, e: number, into: Scanned): number {
  into.address = 1;
  i++;
  if (src[i] === 125) return i + 1;
  for (;;) {
    const ke = keyEnd(src, i, e);
    if (ke < 0) return -1;
    const ve = scalarEnd(src, ke + 3, e);
    if (ve < 0) return -1;
    for (let k = 0; k < ADDRESS.length; k++)
      if (same(src, i + 1, ke, ADDRESS[k]![0])) {
        into.addressValues[k]![0] = ke + 3;
        into.addressValues[k]![1] = ve;
      }
    const next = nextMember(src, ve);
    if (next === undefined) return -1;
    if (next < 0) return -next - 1;
    i = next;
  }
}

/**
 * The location of field f (jsonb's text, `{"key": value, ...}`) scanned into `into`: where each member place() reads
 * is. False for one that scanning does not take (placeOfText's): an escape, a value other than a string or null, an
 * object other than the address, a time that is null (place() takes it as the epoch).
 */
function scanLocation(src: Buffer, f: number, into: Scanned): boolean {
  into.name[0] = into.lat[0] = into.lon[0] = into.time[0] = -1;
  into.address = 0;
  for (const range of into.addressValues) range[0] = -1;
  const e = ends[f]!;
  let i = starts[f]!;
  if (escaped[f] || src[i] !== 123) return false;
  i++;
  let end = src[i] === 125 ? i + 1 : -1;
  while (end < 0) {
    const ke = keyEnd(src, i, e);
    if (ke < 0) return false;
    const vs = ke + 3;
    let ve: number;
    if (src[vs] === 123) {
      if (!same(src, i + 1, ke, ADDRESS_KEY)) return false;
      ve = scanAddress(src, vs, e, into);
    } else {
      ve = scalarEnd(src, vs, e);
      const range = memberRange(src, i + 1, ke, into);
      if (range) {
        range[0] = vs;
        range[1] = ve;
      } else if (src[vs] === 34 && same(src, i + 1, ke, ADDRESS_KEY)) return false;
    }
    if (ve < 0) return false;
    const next = nextMember(src, ve);
    if (next === undefined) return false;
    if (next < 0) end = -next - 1;
    else i = next;
  }
  return end === e && (into.time[0] < 0 || src[into.time[0]] === 34);
}

/** A scanned location as place() renders it (placeOfText's JSON). */
function locationJson(src: Buffer, at: Scanned, out: Buffer, p: number): number {
  if (at.name[0] >= 0) {
    p = put(out, p, L.name);
    for (let k = at.name[0]; k < at.name[1]; k++) out[p++] = src[k]!;
    out[p++] = 44;
  } else out[p++] = 123;
  p = put(out, p, L.lat);
  if (at.lat[0] >= 0) for (let k = at.lat[0]; k < at.lat[1]; k++) out[p++] = src[k]!;
  else p = put(out, p, L.null);
  p = put(out, p, L.lon);
  if (at.lon[0] >= 0) for (let k = at.lon[0]; k < at.lon[1]; k++) out[p++] = src[k]!;
  else p = put(out, p, L.null);
  if (at.time[0] >= 0) {
    p = put(out, p, L.time);
    p = writeFastApiTime(src, at.time[0] + 1, at.time[1] - 1, 84, 'Z', out, p);
    if (p < 0) return -1;
    out[p++] = 34;
  }
  p = put(out, p, L.address);
  if (at.address) {
    out[p++] = 123;
    let first = true;
    for (let k = 0; k < ADDRESS.length; k++) {
      const [s, e] = at.addressValues[k]!;
      if (s < 0) continue;
      if (!first) out[p++] = 44;
      first = false;
      p = put(out, p, ADDRESS[k]![1]);
      for (let j = s; j < e; j++) out[p++] = src[j]!;
    }
    out[p++] = 125;
  } else p = put(out, p, L.null);
  out[p++] = 125;
  return p;
}

/** The locations as the export renders them: scanned, or through placeOfText when scanning does not take them. */
interface Location {
  scanned?: Scanned;
  text?: PlaceText;
}
const startLocation: Location = {};
const endLocation: Location = {};

function location(src: Buffer, f: number, scratch: Scanned, into: Location, out: Buffer, p: number): number {
  into.text = undefined;
  into.scanned = undefined;
  if (isNull(src, f)) {
    into.text = placeOfText(null);
    return put(out, p, L.null);
  }
  if (scanLocation(src, f, scratch)) {
    const q = locationJson(src, scratch, out, p);
    if (q >= 0) {
      into.scanned = scratch;
      return q;
    }
  }
  into.text = placeOfText(fieldText(src, f));
  return putText(out, p, into.text.json);
}

/** A location's name for the CSV ('' when absent or null). */
function locationName(src: Buffer, at: Location, out: Buffer, p: number): number {
  if (at.text) return putText(out, p, csvField(at.text.name));
  const [s, e] = at.scanned!.name;
  return s < 0 || src[s] !== 34 ? p : csvBytes(src, s + 1, e - 1, false, out, p);
}

/** A location's time for the CSV ('' when absent). */
function locationTime(src: Buffer, at: Location, out: Buffer, p: number): number {
  if (at.text) return putText(out, p, csvField(at.text.time));
  const [s, e] = at.scanned!.time;
  return s < 0 ? p : writeFastApiTime(src, s + 1, e - 1, 84, 'Z', out, p);
}

function money(src: Buffer, amount: number, currency: number, out: Buffer, p: number): number {
  if (isNull(src, amount) || isNull(src, currency)) return put(out, p, L.null);
  p = put(out, p, L.amount);
  p = numberField(src, amount, out, p, false);
  p = put(out, p, L.currency);
  p = jsonString(src, currency, out, p);
  out[p++] = 125;
  return p;
}

const csvAmount = (src: Buffer, amount: number, currency: number, out: Buffer, p: number) =>
  isNull(src, amount) || isNull(src, currency) ? p : numberField(src, amount, out, p, true);

/**
 * Writes the JSON line and the CSV line of the drive in COPY row src[start..end) (EXPORT_COLUMNS) into the pages'
 * buffers: exportedDriveLines's bytes. False, with nothing written, for a row that is not of the export's columns,
 * which the caller renders with exportedDriveLines.
 */
export function writeExportedDrive(
  src: Buffer,
  start: number,
  end: number,
  comments: readonly CommentRow[],
  jsonPage: PageBytes,
  csvPage: PageBytes,
): boolean {
  if (!split(src, start, end) || isNull(src, ID) || isNull(src, USER) || isNull(src, STATUS)) return false;
  if (isNull(src, REPORTED) || isNull(src, MODIFIED)) return false;
  const commentsJson = comments.length ? JSON.stringify(comments.map(reviewCommentOf)) : '';
  const commentsCsv = comments.length ? csvField(comments.map((c) => c.text).join(' | ')) : '';
  // Every input byte gives at most 6 (a control character's \u00xx); the lines' own text and the numbers and times
  // that go through strings stay within the rest.
  const row = end - start;
  let out = jsonPage.room(row * 6 + 2048 + commentsJson.length * 3);
  let p = jsonPage.length;

  p = put(out, p, L.id);
  p = idField(src, out, p);
  p = put(out, p, L.driver);
  p = jsonString(src, USER, out, p);
  p = put(out, p, L.distance);
  if (hasDistance(src)) {
    p = put(out, p, L.amount);
    p = numberField(src, DISTANCE, out, p, false);
    p = put(out, p, L.units);
    p = jsonString(src, UNITS, out, p);
    p = put(out, p, L.discounted);
    p = isNull(src, DISCOUNTED) ? put(out, p, L.null) : numberField(src, DISCOUNTED, out, p, false);
    out[p++] = 125;
  } else p = put(out, p, L.null);
  p = put(out, p, L.value);
  p = money(src, VALUE, VALUE_CURRENCY, out, p);
  p = put(out, p, L.toll);
  p = money(src, TOLL, TOLL_CURRENCY, out, p);
  p = put(out, p, L.parking);
  p = money(src, PARKING, PARKING_CURRENCY, out, p);
  p = put(out, p, L.description);
  p = jsonStringOrNull(src, DESCRIPTION, out, p);
  const manual = escaped[ENTRY] === 0 && same(src, starts[ENTRY]!, ends[ENTRY]!, L.manualText);
  p = put(out, p, manual ? L.manual : L.automatic);
  p = jsonStringOrNull(src, CLASSIFICATION, out, p);
  p = put(out, p, L.purpose);
  p = jsonStringOrNull(src, PURPOSE, out, p);
  p = put(out, p, L.start);
  p = location(src, START, scannedStart, startLocation, out, p);
  p = put(out, p, L.end);
  p = location(src, END, scannedEnd, endLocation, out, p);
  p = put(out, p, L.created);
  renderedTimes.reported[0] = p;
  p = pgTime(src, REPORTED, out, p);
  renderedTimes.reported[1] = p;
  p = put(out, p, L.modified);
  renderedTimes.modified[0] = p;
  p = pgTime(src, MODIFIED, out, p);
  renderedTimes.modified[1] = p;
  renderedTimes.json = out;
  p = put(out, p, L.status);
  p = jsonString(src, STATUS, out, p);
  if (commentsJson) {
    p = put(out, p, L.comments);
    p = putText(out, p, commentsJson);
    out[p++] = 125;
    out[p++] = 10;
  } else p = put(out, p, L.noComments);

  const jsonEnd = p;
  out = csvPage.room(row * 2 + 1024 + commentsCsv.length * 3);
  p = csvPage.length;
  for (let k = 0; k < CSV_WRITERS.length; k++) {
    if (k) out[p++] = 44;
    p = CSV_WRITERS[k]!(src, out, p, commentsCsv);
  }
  out[p++] = 10;
  jsonPage.advance(jsonEnd);
  csvPage.advance(p);
  return true;
}

/**
 * Where the current row's times are in its JSON line (the same text as the CSV's fields): rendered once, copied into
 * the CSV line.
 */
const renderedTimes: { json: Buffer; reported: number[]; modified: number[] } = {
  json: Buffer.alloc(0),
  reported: [0, 0],
  modified: [0, 0],
};

function copyRendered([start, end]: number[], out: Buffer, p: number): number {
  const json = renderedTimes.json;
  for (let k = start!; k < end!; k++) out[p++] = json[k]!;
  return p;
}

const hasDistance = (src: Buffer) => !isNull(src, DISTANCE) && !isNull(src, UNITS);

/** Writes one field of the CSV line (`comments`: the review comments' field, already quoted). */
type CsvWriter = (src: Buffer, out: Buffer, p: number, comments: string) => number;
/** Each column of the CSV by its header (EXPORT_CSV_COLUMNS), so that the fields follow the header's order. */
const CSV_COLUMN_WRITERS: Record<(typeof EXPORT_CSV_COLUMNS)[number], CsvWriter> = {
  id: (src, out, p) => idField(src, out, p),
  driver_id: (src, out, p) => csvString(src, USER, out, p),
  status: (src, out, p) => csvString(src, STATUS, out, p),
  reported_at: (_src, out, p) => copyRendered(renderedTimes.reported, out, p),
  modified: (_src, out, p) => copyRendered(renderedTimes.modified, out, p),
  started_at: (src, out, p) => locationTime(src, startLocation, out, p),
  ended_at: (src, out, p) => locationTime(src, endLocation, out, p),
  classification: (src, out, p) => csvString(src, CLASSIFICATION, out, p),
  purpose: (src, out, p) => csvString(src, PURPOSE, out, p),
  description: (src, out, p) => csvString(src, DESCRIPTION, out, p),
  distance: (src, out, p) => (hasDistance(src) ? numberField(src, DISTANCE, out, p, true) : p),
  distance_units: (src, out, p) => (hasDistance(src) ? csvString(src, UNITS, out, p) : p),
  value: (src, out, p) => csvAmount(src, VALUE, VALUE_CURRENCY, out, p),
  toll_fees: (src, out, p) => csvAmount(src, TOLL, TOLL_CURRENCY, out, p),
  parking_fees: (src, out, p) => csvAmount(src, PARKING, PARKING_CURRENCY, out, p),
  currency: (src, out, p) => {
    const currency = firstCurrency(src);
    return currency < 0 ? p : csvString(src, currency, out, p);
  },
  start: (src, out, p) => locationName(src, startLocation, out, p),
  end: (src, out, p) => locationName(src, endLocation, out, p),
  review_comments: (_src, out, p, comments) => putText(out, p, comments),
};
const CSV_WRITERS = EXPORT_CSV_COLUMNS.map((column) => CSV_COLUMN_WRITERS[column]);

/** The CSV's currency: that of the first amount present (exportedDriveLines's), else -1. */
function firstCurrency(src: Buffer): number {
  for (const [amount, currency] of CURRENCIES) if (!isNull(src, amount) && !isNull(src, currency)) return currency;
  return -1;
}
const CURRENCIES = [
  [VALUE, VALUE_CURRENCY],
  [TOLL, TOLL_CURRENCY],
  [PARKING, PARKING_CURRENCY],
] as const;
