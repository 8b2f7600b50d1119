// A reported drive's two export lines written from its COPY row's bytes, in WebAssembly (AssemblyScript; the service's
// build compiles it into dist/export-render.wasm, which export-render.ts runs). The same lines as exportedDriveLines
// (export-lines.ts), which renders any row this refuses. This module compiles alone, without the service's TypeScript:
// the facts the two share (EXPORT_COLUMNS's positions, ADDRESS_KEYS, COPY's escapes, CSV's quoted characters) come from
// export-render-facts.ts, which src/export-render-facts.ts generates from them. EXPORT_CSV_COLUMNS's order is this
// module's code: export-render.test.ts holds the two renderers equal over random rows and fails on any difference.
import {
  ADDRESS_API_KEYS,
  BINARY_KIND_INT8,
  BINARY_KIND_JSONB,
  BINARY_KIND_NUMERIC,
  BINARY_KIND_TEXT,
  BINARY_KIND_TIMESTAMPTZ,
  ADDRESS_COUNT,
  ADDRESS_STORED_KEYS,
  CLASSIFICATION,
  COMMENT_CREATED,
  COMMENT_EMAIL,
  COMMENT_FIELDS,
  COMMENT_ID,
  COMMENT_TEXT,
  COPY_ESCAPE_BYTES,
  CSV_QUOTED_BYTES,
  DESCRIPTION,
  DISCOUNTED,
  DISTANCE,
  END,
  ENTRY,
  FIELDS,
  ID,
  MODIFIED,
  PARKING,
  PARKING_CURRENCY,
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
} from './export-render-facts';

// Where the fields of the row being rendered are (a drive's or a comment's, split).
const MOST_FIELDS = FIELDS > COMMENT_FIELDS ? FIELDS : COMMENT_FIELDS;
const starts = new StaticArray<i32>(MOST_FIELDS);
const ends = new StaticArray<i32>(MOST_FIELDS);
const escaped = new StaticArray<u8>(MOST_FIELDS);

/** Set when a field is outside the forms rendered here: the row is then rendered by exportedDriveLines. */
let refused = false;

class Bytes {
  constructor(
    public at: usize,
    public length: i32,
  ) {}
}
function lit(text: string): Bytes {
  const buffer = String.UTF8.encode(text);
  return new Bytes(changetype<usize>(buffer), buffer.byteLength);
}

const L_ID = lit('{"id":"');
const L_DRIVER = lit('","driver":{"id":');
const L_DISTANCE = lit('},"details":{"distance":');
const L_AMOUNT = lit('{"amount":');
const L_UNITS = lit(',"units":');
const L_DISCOUNTED = lit(',"discounted":');
const L_CURRENCY = lit(',"currency":');
const L_VALUE = lit(',"value":');
const L_TOLL = lit(',"toll_fees":');
const L_PARKING = lit(',"parking_fees":');
const L_DESCRIPTION = lit(',"description":');
const L_MANUAL = lit(',"entry":"manual","classification":');
const L_AUTOMATIC = lit(',"entry":"automatic","classification":');
const L_PURPOSE = lit(',"purpose":');
const L_START = lit(',"start":');
const L_END = lit(',"end":');
const L_CREATED = lit('},"created":"');
const L_MODIFIED = lit('","modified":"');
const L_STATUS = lit('","status":');
const L_COMMENTS = lit(',"review_comments":');
const L_NO_COMMENTS = lit(',"review_comments":[]}\n');
const L_NULL = lit('null');
const L_COMMENT_ID = lit('{"id":"');
const L_COMMENT_TEXT = lit('","text":');
const L_COMMENT_CREATED = lit(',"created_at":"');
const L_COMMENT_EMAIL = lit('","user_email":');
const L_COMMENT_SEPARATOR = lit(' | ');
const L_NAME = lit('{"name":');
const L_LAT = lit('"lat":');
const L_LON = lit(',"lon":');
const L_TIME = lit(',"time":"');
const L_ADDRESS = lit(',"address":');
const MANUAL_TEXT = lit('manual');
const PG_TAIL = lit('+00');
const ISO_TAIL = lit('Z');
const KEY_NAME = lit('name');
const KEY_LAT = lit('lat');
const KEY_LON = lit('lon');
const KEY_TIME = lit('time');
const KEY_ADDRESS = lit('address');
// ADDRESS_KEYS: as stored, and as the API's member names (with their quotes and colon, as the line writes them).
const ADDRESS_STORED = new StaticArray<Bytes>(ADDRESS_COUNT);
const ADDRESS_API = new StaticArray<Bytes>(ADDRESS_COUNT);
for (let k = 0; k < ADDRESS_COUNT; k++) {
  ADDRESS_STORED[k] = lit(ADDRESS_STORED_KEYS[k]);
  ADDRESS_API[k] = lit('"' + ADDRESS_API_KEYS[k] + '":');
}

/** The byte a COPY escape `\x` stands for (COPY_ESCAPES): x itself unless named. */
const UNESCAPED = new StaticArray<u8>(256);
/** The bytes that make a CSV field quoted (CSV_QUOTED_CHARACTERS). */
const CSV_QUOTED = new StaticArray<u8>(256);
/** JSON.stringify's short escapes of control characters; the others are \u00xx. */
const SHORT_ESCAPES = new StaticArray<u8>(32);
const HEX = lit('0123456789abcdef');
for (let i = 0; i < 256; i++) unchecked((UNESCAPED[i] = <u8>i));
for (let i = 0; i < COPY_ESCAPE_BYTES.length; i += 2) UNESCAPED[COPY_ESCAPE_BYTES[i]] = COPY_ESCAPE_BYTES[i + 1];
for (let i = 0; i < CSV_QUOTED_BYTES.length; i++) CSV_QUOTED[CSV_QUOTED_BYTES[i]] = 1;
SHORT_ESCAPES[8] = 0x62;
SHORT_ESCAPES[9] = 0x74;
SHORT_ESCAPES[10] = 0x6e;
SHORT_ESCAPES[12] = 0x66;
SHORT_ESCAPES[13] = 0x72;

function at(i: usize): u32 {
  return <u32>load<u8>(i);
}
function isDigit(c: u32): bool {
  return c - 48 < 10;
}
/**
 * n bytes from s to p, 8 at a time: the lines' pieces are short, and V8 runs memory.copy as a call out of the module,
 * which cost more than the copy.
 */
function copyBytes(p: usize, s: usize, n: usize): void {
  let k: usize = 0;
  for (; k + 8 <= n; k += 8) store<u64>(p + k, load<u64>(s + k));
  for (; k < n; k++) store<u8>(p + k, load<u8>(s + k));
}
function put(p: usize, bytes: Bytes): usize {
  copyBytes(p, bytes.at, bytes.length);
  return p + bytes.length;
}
function copy(p: usize, s: usize, e: usize): usize {
  copyBytes(p, s, e - s);
  return p + (e - s);
}
function same(s: usize, e: usize, bytes: Bytes): bool {
  if (<i32>(e - s) != bytes.length) return false;
  return memory.compare(s, bytes.at, bytes.length) == 0;
}
function fieldStart(f: i32): usize {
  return <usize>unchecked(starts[f]);
}
function fieldEnd(f: i32): usize {
  return <usize>unchecked(ends[f]);
}

/** Splits the row [start, end) at its tabs (a tab in a value is escaped); false unless it has `fields` fields. */
function split(start: usize, end: usize, fields: i32): bool {
  let f = 0;
  unchecked((starts[0] = <i32>start));
  unchecked((escaped[0] = 0));
  for (let i = start; i < end; i++) {
    const c = at(i);
    if (c == 9) {
      unchecked((ends[f] = <i32>i));
      if (++f == fields) return false;
      unchecked((starts[f] = <i32>(i + 1)));
      unchecked((escaped[f] = 0));
    } else if (c == 92) {
      unchecked((escaped[f] = 1));
      i++;
    }
  }
  unchecked((ends[f] = <i32>end));
  return f == fields - 1;
}

function isNull(f: i32): bool {
  const s = fieldStart(f);
  return unchecked(escaped[f]) == 1 && fieldEnd(f) - s == 2 && at(s) == 92 && at(s + 1) == 78;
}

/** Field f as JSON.stringify writes its text: quoted, `"`, `\` and control characters escaped. */
function jsonString(f: i32, p: usize): usize {
  store<u8>(p++, 34);
  const e = fieldEnd(f);
  for (let i = fieldStart(f); i < e; i++) {
    let c = at(i);
    if (c == 92) c = unchecked(UNESCAPED[at(++i)]);
    if (c >= 32 && c != 34 && c != 92) {
      store<u8>(p++, c);
      continue;
    }
    store<u8>(p++, 92);
    if (c >= 32) store<u8>(p++, c);
    else if (unchecked(SHORT_ESCAPES[c])) store<u8>(p++, unchecked(SHORT_ESCAPES[c]));
    else {
      store<u8>(p++, 117);
      store<u8>(p++, 48);
      store<u8>(p++, 48);
      store<u8>(p++, load<u8>(HEX.at + (c >> 4)));
      store<u8>(p++, load<u8>(HEX.at + (c & 15)));
    }
  }
  store<u8>(p++, 34);
  return p;
}

function jsonStringOrNull(f: i32, p: usize): usize {
  return isNull(f) ? put(p, L_NULL) : jsonString(f, p);
}

/** Whether [s, e) (COPY escapes read when `copyEscapes`) is quoted in a CSV field: it holds , " CR or LF. */
function csvQuoted(s: usize, e: usize, copyEscapes: bool): bool {
  for (let i = s; i < e; i++) {
    let c = at(i);
    if (c == 92 && copyEscapes) c = unchecked(UNESCAPED[at(++i)]);
    if (unchecked(CSV_QUOTED[c])) return true;
  }
  return false;
}

/** [s, e)'s text (COPY escapes read when `copyEscapes`) inside a CSV field, its quotes doubled (a quoted field's). */
function csvText(s: usize, e: usize, copyEscapes: bool, p: usize): usize {
  for (let i = s; i < e; i++) {
    let c = at(i);
    if (c == 92 && copyEscapes) c = unchecked(UNESCAPED[at(++i)]);
    store<u8>(p++, c);
    if (c == 34) store<u8>(p++, 34);
  }
  return p;
}

/** [s, e) (COPY escapes read when `copyEscapes`) as a CSV field (csvField): quoted when it holds , " CR or LF. */
function csvBytes(s: usize, e: usize, copyEscapes: bool, p: usize): usize {
  const quoted = csvQuoted(s, e, copyEscapes);
  if (!quoted && !copyEscapes) return copy(p, s, e);
  if (quoted) store<u8>(p++, 34);
  p = csvText(s, e, copyEscapes, p);
  if (quoted) store<u8>(p++, 34);
  return p;
}

function csvString(f: i32, p: usize): usize {
  return isNull(f) ? p : csvBytes(fieldStart(f), fieldEnd(f), unchecked(escaped[f]) == 1, p);
}

/**
 * A numeric or bigint column's text as JavaScript prints its Number (String(Number(text))), for the forms where that
 * is the text itself without trailing fraction zeros: at most 15 significant digits (a double holds them exactly and
 * prints them shortest), not below 1e-6 nor from 1e21 (printed with an exponent). Any other refuses the row.
 */
function numberField(f: i32, p: usize): usize {
  const s = fieldStart(f);
  const e = fieldEnd(f);
  const negative = at(s) == 45;
  const intStart = negative ? s + 1 : s;
  let i = intStart;
  while (i < e && isDigit(at(i))) i++;
  const intEnd = i;
  if (intEnd == intStart || (at(intStart) == 48 && intEnd - intStart > 1)) return refuse(p);
  let fracStart = e;
  let fracEnd = e;
  if (i < e) {
    if (at(i) != 46) return refuse(p);
    fracStart = i + 1;
    for (i = fracStart; i < e; i++) if (!isDigit(at(i))) return refuse(p);
    if (fracStart == e) return refuse(p);
    while (fracEnd > fracStart && at(fracEnd - 1) == 48) fracEnd--;
  }
  let significant: usize;
  if (at(intStart) == 48) {
    // 0, -0 and 0.00 print 0.
    if (fracEnd == fracStart) {
      store<u8>(p++, 48);
      return p;
    }
    let first = fracStart;
    while (at(first) == 48) first++;
    if (first - fracStart > 5) return refuse(p);
    significant = fracEnd - first;
  } else {
    if (intEnd - intStart > 21) return refuse(p);
    let last = intEnd;
    if (fracEnd == fracStart) while (at(last - 1) == 48) last--;
    significant = last - intStart + (fracEnd - fracStart);
  }
  if (significant > 15) return refuse(p);
  if (negative) store<u8>(p++, 45);
  p = copy(p, intStart, intEnd);
  if (fracEnd > fracStart) {
    store<u8>(p++, 46);
    p = copy(p, fracStart, fracEnd);
  }
  return p;
}

function refuse(p: usize): usize {
  refused = true;
  return p;
}

/** An id (the drive's, a comment's) as String(Number(text)): digits up to 15 as they are. */
function idField(f: i32, p: usize): usize {
  const s = fieldStart(f);
  const e = fieldEnd(f);
  if (e - s > 15 || e == s || (at(s) == 48 && e - s > 1)) return refuse(p);
  for (let i = s; i < e; i++) if (!isDigit(at(i))) return refuse(p);
  return copy(p, s, e);
}

const DIGIT_POSITIONS: StaticArray<u8> = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];
function digits2(i: usize): u32 {
  return (at(i) - 48) * 10 + (at(i + 1) - 48);
}
function daysIn(year: u32, month: u32): u32 {
  if (month == 2) return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28;
  return month == 4 || month == 6 || month == 9 || month == 11 ? 30 : 31;
}

/**
 * The time [s, e) as the API prints its instant (`YYYY-MM-DDTHH:MM:SS.fffZ`), for the forms the runtime's fastMillis
 * takes (wire-time.ts: `sep` between date and time, ending in `tail`, from 1970, up to 3 digits of fraction): the end
 * of what it wrote, or -1 for any other text.
 */
function apiTime(s: usize, e: usize, sep: u32, tail: Bytes, p: usize): isize {
  const fracEnd = <i32>(e - s) - tail.length;
  if (fracEnd < 19 || fracEnd > 23 || fracEnd == 20) return -1;
  if (at(s + 4) != 45 || at(s + 7) != 45 || at(s + 10) != sep) return -1;
  if (at(s + 13) != 58 || at(s + 16) != 58 || (fracEnd > 19 && at(s + 19) != 46)) return -1;
  if (memory.compare(s + fracEnd, tail.at, tail.length) != 0) return -1;
  for (let k = 0; k < DIGIT_POSITIONS.length; k++) if (!isDigit(at(s + unchecked(DIGIT_POSITIONS[k])))) return -1;
  for (let i = 20; i < fracEnd; i++) if (!isDigit(at(s + i))) return -1;
  const year = digits2(s) * 100 + digits2(s + 2);
  const month = digits2(s + 5);
  const day = digits2(s + 8);
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return -1;
  if (digits2(s + 11) > 23 || digits2(s + 14) > 59 || digits2(s + 17) > 59) return -1;
  copyBytes(p, s, 19);
  store<u8>(p + 10, 84);
  p += 19;
  store<u8>(p++, 46);
  // The fraction's digits to milliseconds: trimmed zeros back.
  for (let i = 20; i < 23; i++) store<u8>(p++, i < fracEnd ? at(s + i) : 48);
  store<u8>(p++, 90);
  return p;
}

function pgTime(f: i32, p: usize): usize {
  const q = apiTime(fieldStart(f), fieldEnd(f), 32, PG_TAIL, p);
  return q < 0 ? refuse(p) : q;
}

/** A stored location read from its jsonb text: where its members' values are (-1 when absent; with their quotes). */
class Scanned {
  nameS: isize = -1;
  nameE: isize = -1;
  latS: isize = -1;
  latE: isize = -1;
  lonS: isize = -1;
  lonE: isize = -1;
  timeS: isize = -1;
  timeE: isize = -1;
  address: bool = false;
  addressS: StaticArray<isize> = new StaticArray<isize>(ADDRESS_COUNT);
  addressE: StaticArray<isize> = new StaticArray<isize>(ADDRESS_COUNT);
}
const startLocation = new Scanned();
const endLocation = new Scanned();
/** The end of a jsonb string (no backslash in the field, so no escape) or null at i; -1 for any other value. */
function scalarEnd(i: usize, e: usize): isize {
  if (at(i) == 34) {
    for (let k = i + 1; k < e; k++) if (at(k) == 34) return k + 1;
    return -1;
  }
  return at(i) == 110 && at(i + 1) == 117 && at(i + 2) == 108 && at(i + 3) == 108 ? i + 4 : -1;
}

/** A key at i as jsonb prints it (`"key": `): its closing quote, or -1. Its value starts 3 bytes after. */
function keyEnd(i: usize, e: usize): isize {
  if (at(i) != 34) return -1;
  const ke = scalarEnd(i, e) - 1;
  return ke < 0 || at(ke + 1) != 58 || at(ke + 2) != 32 ? -1 : ke;
}

/** After a member's value at ve: the next member's start, the object's end as -(end + 1), or 0 for neither. */
function nextMember(ve: usize): isize {
  if (at(ve) == 125) return -(<isize>ve + 2);
  return at(ve) == 44 && at(ve + 1) == 32 ? ve + 2 : 0;
}

/** The address object at i (strings and nulls only), its values noted in `into`; its end, or -1. */
function scanAddress(i: usize, e: usize, into: Scanned): isize {
  into.address = true;
  i++;
  if (at(i) == 125) return i + 1;
  for (;;) {
    const ke = keyEnd(i, e);
    if (ke < 0) return -1;
    const ve = scalarEnd(ke + 3, e);
    if (ve < 0) return -1;
    for (let k = 0; k < ADDRESS_COUNT; k++)
      if (same(i + 1, ke, unchecked(ADDRESS_STORED[k]))) {
        unchecked((into.addressS[k] = ke + 3));
        unchecked((into.addressE[k] = ve));
      }
    const next = nextMember(ve);
    if (next == 0) return -1;
    if (next < 0) return -next - 1;
    i = next;
  }
  return -1;
}

/** Location field f scanned into `into` (scanLocation's forms); false for one it does not take. */
function scanLocation(f: i32, into: Scanned): bool {
  into.nameS = into.latS = into.lonS = into.timeS = -1;
  into.address = false;
  for (let k = 0; k < ADDRESS_COUNT; k++) unchecked((into.addressS[k] = -1));
  const e = fieldEnd(f);
  let i = fieldStart(f);
  if (unchecked(escaped[f]) || at(i) != 123) return false;
  i++;
  let end: isize = at(i) == 125 ? i + 1 : -1;
  while (end < 0) {
    const ke = keyEnd(i, e);
    if (ke < 0) return false;
    const vs = ke + 3;
    let ve: isize;
    if (at(vs) == 123) {
      if (!same(i + 1, ke, KEY_ADDRESS)) return false;
      ve = scanAddress(vs, e, into);
    } else {
      ve = scalarEnd(vs, e);
      const ks = i + 1;
      if (same(ks, ke, KEY_NAME)) {
        into.nameS = vs;
        into.nameE = ve;
      } else if (same(ks, ke, KEY_LAT)) {
        into.latS = vs;
        into.latE = ve;
      } else if (same(ks, ke, KEY_LON)) {
        into.lonS = vs;
        into.lonE = ve;
      } else if (same(ks, ke, KEY_TIME)) {
        into.timeS = vs;
        into.timeE = ve;
      } else if (at(vs) == 34 && same(ks, ke, KEY_ADDRESS)) return false;
    }
    if (ve < 0) return false;
    const next = nextMember(ve);
    if (next == 0) return false;
    if (next < 0) end = -next - 1;
    else i = next;
  }
  return end == e && (into.timeS < 0 || at(into.timeS) == 34);
}

/** A scanned location as place() renders it; refuses the row for a time outside apiTime's forms. */
function locationJson(a: Scanned, p: usize): usize {
  if (a.nameS >= 0) {
    p = put(p, L_NAME);
    p = copy(p, a.nameS, a.nameE);
    store<u8>(p++, 44);
  } else store<u8>(p++, 123);
  p = put(p, L_LAT);
  p = a.latS >= 0 ? copy(p, a.latS, a.latE) : put(p, L_NULL);
  p = put(p, L_LON);
  p = a.lonS >= 0 ? copy(p, a.lonS, a.lonE) : put(p, L_NULL);
  if (a.timeS >= 0) {
    p = put(p, L_TIME);
    const q = apiTime(a.timeS + 1, a.timeE - 1, 84, ISO_TAIL, p);
    if (q < 0) return refuse(p);
    p = q;
    store<u8>(p++, 34);
  }
  p = put(p, L_ADDRESS);
  if (a.address) {
    store<u8>(p++, 123);
    let first = true;
    for (let k = 0; k < ADDRESS_COUNT; k++) {
      const s = unchecked(a.addressS[k]);
      if (s < 0) continue;
      if (!first) store<u8>(p++, 44);
      first = false;
      p = put(p, unchecked(ADDRESS_API[k]));
      p = copy(p, s, unchecked(a.addressE[k]));
    }
    store<u8>(p++, 125);
  } else p = put(p, L_NULL);
  store<u8>(p++, 125);
  return p;
}

function location(f: i32, into: Scanned, p: usize): usize {
  if (isNull(f)) return put(p, L_NULL);
  return scanLocation(f, into) ? locationJson(into, p) : refuse(p);
}

/** A location's name for the CSV (nothing when absent or null). */
function locationName(f: i32, a: Scanned, p: usize): usize {
  if (isNull(f) || a.nameS < 0 || at(a.nameS) != 34) return p;
  return csvBytes(a.nameS + 1, a.nameE - 1, false, p);
}

/** A location's time for the CSV (nothing when absent). */
function locationTime(f: i32, a: Scanned, p: usize): usize {
  if (isNull(f) || a.timeS < 0) return p;
  const q = apiTime(a.timeS + 1, a.timeE - 1, 84, ISO_TAIL, p);
  return q < 0 ? refuse(p) : q;
}

function money(amount: i32, currency: i32, p: usize): usize {
  if (isNull(amount) || isNull(currency)) return put(p, L_NULL);
  p = put(p, L_AMOUNT);
  p = numberField(amount, p);
  p = put(p, L_CURRENCY);
  p = jsonString(currency, p);
  store<u8>(p++, 125);
  return p;
}

function csvAmount(amount: i32, currency: i32, p: usize): usize {
  return isNull(amount) || isNull(currency) ? p : numberField(amount, p);
}

function hasDistance(): bool {
  return !isNull(DISTANCE) && !isNull(UNITS);
}

/** The CSV's currency: that of the first amount present, else -1. */
function firstCurrency(): i32 {
  if (!isNull(VALUE) && !isNull(VALUE_CURRENCY)) return VALUE_CURRENCY;
  if (!isNull(TOLL) && !isNull(TOLL_CURRENCY)) return TOLL_CURRENCY;
  if (!isNull(PARKING) && !isNull(PARKING_CURRENCY)) return PARKING_CURRENCY;
  return -1;
}

/** Where the JSON line and the CSV line end after a row that render() took. */
export let jsonEnd: usize = 0;
export let csvEnd: usize = 0;

/**
 * Writes the JSON line of the COPY row [start, end) at `json` and its CSV line at `csv`, with the review comments'
 * JSON array and CSV field (already rendered, [commentsJson, +commentsJsonLength) and the like; empty for none):
 * true, the lines' ends in jsonEnd and csvEnd. False for a row outside the forms rendered here, which the caller
 * renders with exportedDriveLines; what was written then is garbage past the lines' ends.
 */
export function render(
  start: usize,
  end: usize,
  json: usize,
  csv: usize,
  commentsJson: usize,
  commentsJsonLength: usize,
  commentsCsv: usize,
  commentsCsvLength: usize,
): bool {
  if (!split(start, end, FIELDS) || isNull(ID) || isNull(USER) || isNull(STATUS)) return false;
  if (isNull(REPORTED) || isNull(MODIFIED)) return false;
  refused = false;
  let p = json;
  p = put(p, L_ID);
  p = idField(ID, p);
  p = put(p, L_DRIVER);
  p = jsonString(USER, p);
  p = put(p, L_DISTANCE);
  const distance = hasDistance();
  if (distance) {
    p = put(p, L_AMOUNT);
    p = numberField(DISTANCE, p);
    p = put(p, L_UNITS);
    p = jsonString(UNITS, p);
    p = put(p, L_DISCOUNTED);
    p = isNull(DISCOUNTED) ? put(p, L_NULL) : numberField(DISCOUNTED, p);
    store<u8>(p++, 125);
  } else p = put(p, L_NULL);
  p = put(p, L_VALUE);
  p = money(VALUE, VALUE_CURRENCY, p);
  p = put(p, L_TOLL);
  p = money(TOLL, TOLL_CURRENCY, p);
  p = put(p, L_PARKING);
  p = money(PARKING, PARKING_CURRENCY, p);
  p = put(p, L_DESCRIPTION);
  p = jsonStringOrNull(DESCRIPTION, p);
  const manual = unchecked(escaped[ENTRY]) == 0 && same(fieldStart(ENTRY), fieldEnd(ENTRY), MANUAL_TEXT);
  p = put(p, manual ? L_MANUAL : L_AUTOMATIC);
  p = jsonStringOrNull(CLASSIFICATION, p);
  p = put(p, L_PURPOSE);
  p = jsonStringOrNull(PURPOSE, p);
  p = put(p, L_START);
  p = location(START, startLocation, p);
  p = put(p, L_END);
  p = location(END, endLocation, p);
  p = put(p, L_CREATED);
  const reportedAt = p;
  p = pgTime(REPORTED, p);
  const reportedEnd = p;
  p = put(p, L_MODIFIED);
  const modifiedAt = p;
  p = pgTime(MODIFIED, p);
  const modifiedEnd = p;
  p = put(p, L_STATUS);
  p = jsonString(STATUS, p);
  if (commentsJsonLength) {
    p = put(p, L_COMMENTS);
    copyBytes(p, commentsJson, commentsJsonLength);
    p += commentsJsonLength;
    store<u16>(p, 0x0a7d);
    p += 2;
  } else p = put(p, L_NO_COMMENTS);
  if (refused) return false;
  jsonEnd = p;

  // EXPORT_CSV_COLUMNS's order.
  let q = csv;
  q = idField(ID, q);
  store<u8>(q++, 44);
  q = csvString(USER, q);
  store<u8>(q++, 44);
  q = csvString(STATUS, q);
  store<u8>(q++, 44);
  q = copy(q, reportedAt, reportedEnd);
  store<u8>(q++, 44);
  q = copy(q, modifiedAt, modifiedEnd);
  store<u8>(q++, 44);
  q = locationTime(START, startLocation, q);
  store<u8>(q++, 44);
  q = locationTime(END, endLocation, q);
  store<u8>(q++, 44);
  q = csvString(CLASSIFICATION, q);
  store<u8>(q++, 44);
  q = csvString(PURPOSE, q);
  store<u8>(q++, 44);
  q = csvString(DESCRIPTION, q);
  store<u8>(q++, 44);
  if (distance) q = numberField(DISTANCE, q);
  store<u8>(q++, 44);
  if (distance) q = csvString(UNITS, q);
  store<u8>(q++, 44);
  q = csvAmount(VALUE, VALUE_CURRENCY, q);
  store<u8>(q++, 44);
  q = csvAmount(TOLL, TOLL_CURRENCY, q);
  store<u8>(q++, 44);
  q = csvAmount(PARKING, PARKING_CURRENCY, q);
  store<u8>(q++, 44);
  const currency = firstCurrency();
  if (currency >= 0) q = csvString(currency, q);
  store<u8>(q++, 44);
  q = locationName(START, startLocation, q);
  store<u8>(q++, 44);
  q = locationName(END, endLocation, q);
  store<u8>(q++, 44);
  copyBytes(q, commentsCsv, commentsCsvLength);
  q += commentsCsvLength;
  store<u8>(q++, 10);
  csvEnd = q;
  return !refused;
}

/** Where the comments' JSON array and CSV field end after renderComments took them. */
export let commentsJsonEnd: usize = 0;
export let commentsCsvEnd: usize = 0;

/** The end of the COPY row that starts at `s`: its newline's offset (before `end`, where the rows end). */
function rowEnd(s: usize, end: usize): usize {
  while (s < end && at(s) != 10) s++;
  return s;
}

/** Splits the comment row at `s` (rows ending before `end`); false for one without its fields or with a NULL. */
function splitComment(s: usize, end: usize): bool {
  if (!split(s, rowEnd(s, end), COMMENT_FIELDS)) return false;
  return !isNull(COMMENT_ID) && !isNull(COMMENT_TEXT) && !isNull(COMMENT_EMAIL) && !isNull(COMMENT_CREATED);
}

/**
 * One drive's review comments, the COPY rows [start, end) of EXPORT_COMMENTS_SQL (each ending in its newline), as
 * reviewCommentsJson writes them at `json` and as csvField(reviewCommentsText(...)) does at `csv`: true, their ends in
 * commentsJsonEnd and commentsCsvEnd. False for a comment outside the forms rendered here, which the caller renders.
 */
export function renderComments(start: usize, end: usize, json: usize, csv: usize): bool {
  refused = false;
  let quoted = false;
  let p = json;
  store<u8>(p++, 91);
  for (let s = start; s < end; s = fieldEnd(COMMENT_FIELDS - 1) + 1) {
    if (!splitComment(s, end)) return false;
    if (s != start) store<u8>(p++, 44);
    p = put(p, L_COMMENT_ID);
    p = idField(COMMENT_ID, p);
    p = put(p, L_COMMENT_TEXT);
    p = jsonString(COMMENT_TEXT, p);
    p = put(p, L_COMMENT_CREATED);
    p = pgTime(COMMENT_CREATED, p);
    p = put(p, L_COMMENT_EMAIL);
    p = jsonString(COMMENT_EMAIL, p);
    store<u8>(p++, 125);
    const copyEscapes = unchecked(escaped[COMMENT_TEXT]) == 1;
    quoted = quoted || csvQuoted(fieldStart(COMMENT_TEXT), fieldEnd(COMMENT_TEXT), copyEscapes);
  }
  store<u8>(p++, 93);
  if (refused) return false;
  // The texts joined into one field, quoted when any of them holds what CSV quotes.
  let q = csv;
  if (quoted) store<u8>(q++, 34);
  for (let s = start; s < end; s = fieldEnd(COMMENT_FIELDS - 1) + 1) {
    splitComment(s, end);
    if (s != start) q = put(q, L_COMMENT_SEPARATOR);
    q = csvText(fieldStart(COMMENT_TEXT), fieldEnd(COMMENT_TEXT), unchecked(escaped[COMMENT_TEXT]) == 1, q);
  }
  if (quoted) store<u8>(q++, 34);
  commentsJsonEnd = p;
  commentsCsvEnd = q;
  return true;
}

/** `bytes` of the module's memory for the caller's use (the rows in, the lines out): where they start. */
export function reserve(bytes: usize): usize {
  return heap.alloc(bytes);
}

// Binary COPY rows written as the text COPY of the same rows (textFromBinary): PostgreSQL sends a binary value for less
// of its CPU than its text (a time or a number is not printed), and the renderer above reads the text.

/** Where the text ends after a page that textFromBinary took. */
export let textEnd: usize = 0;

function be16(i: usize): i32 {
  return <i32>(<i16>bswap<u16>(load<u16>(i)));
}
function be32(i: usize): i32 {
  return <i32>bswap<u32>(load<u32>(i));
}
function be64(i: usize): i64 {
  return <i64>bswap<u64>(load<u64>(i));
}

/** The letter of COPY's text escape for byte c (COPY_ESCAPE_BYTES: \b \f \n \r \t \v), 0 for none. */
const ESCAPE_LETTER = new StaticArray<u8>(32);
for (let i = 0; i < COPY_ESCAPE_BYTES.length; i += 2) ESCAPE_LETTER[COPY_ESCAPE_BYTES[i + 1]] = COPY_ESCAPE_BYTES[i];

// Written from 32-bit halves: the linter reads a 64-bit literal as a JavaScript number, which cannot hold it.
const ONES: u64 = ((<u64>0x01010101) << 32) | 0x01010101;
const HIGHS: u64 = ONES * 0x80;
/** Whether the 8 bytes of w hold a byte below 0x20 or a backslash (the bytes COPY's text escapes). */
function needsEscape(w: u64): bool {
  const backslashes = w ^ (ONES * 92);
  return (((w - ONES * 32) & ~w) | ((backslashes - ONES) & ~backslashes)) & HIGHS ? true : false;
}

/** [s, e) as COPY's text format writes a value (PostgreSQL's CopyAttributeOutText, a tab the delimiter). */
function copyText(s: usize, e: usize, p: usize): usize {
  let i = s;
  // 8 bytes at a time while none is escaped: most of a text is not.
  for (; i + 8 <= e; i += 8) {
    const w = load<u64>(i);
    if (needsEscape(w)) break;
    store<u64>(p, w);
    p += 8;
  }
  for (; i < e; i++) {
    const c = at(i);
    if (c == 92) {
      store<u16>(p, 0x5c5c);
      p += 2;
    } else if (c < 32 && unchecked(ESCAPE_LETTER[c])) {
      store<u8>(p++, 92);
      store<u8>(p++, unchecked(ESCAPE_LETTER[c]));
    } else store<u8>(p++, c);
  }
  return p;
}

/** u as decimal digits at p, at least `width` of them (zeros before). */
function decimal(u: u64, width: i32, p: usize): usize {
  let n = 1;
  for (let v = u / 10; v > 0; v /= 10) n++;
  if (n < width) n = width;
  for (let k = n - 1; k >= 0; k--) {
    store<u8>(p + k, <u8>(48 + <u32>(u % 10)));
    u /= 10;
  }
  return p + n;
}

/** An int8's text (int8out). */
function int8Text(v: i64, p: usize): usize {
  if (v < 0) {
    store<u8>(p++, 45);
    return decimal(<u64>0 - <u64>v, 1, p);
  }
  return decimal(<u64>v, 1, p);
}

const MICROS_A_DAY: i64 = 86_400_000_000;
/** Days from 1970-01-01 to PostgreSQL's epoch, 2000-01-01. */
const EPOCH_DAYS: i64 = 10_957;

/**
 * A timestamptz's text (microseconds from 2000-01-01 UTC) as timestamptz_out writes it in the UTC zone with DateStyle
 * ISO: `YYYY-MM-DD HH:MM:SS[.ffffff without its trailing zeros]+00`; -1 outside the years 1 to 9999 (infinity too).
 */
function timestampText(t: i64, p: usize): isize {
  let days = t / MICROS_A_DAY;
  let micros = t % MICROS_A_DAY;
  if (micros < 0) {
    micros += MICROS_A_DAY;
    days--;
  }
  // The civil date of a day count (Howard Hinnant's days_from_civil, inverted).
  const z = days + EPOCH_DAYS + 719_468;
  const era = (z >= 0 ? z : z - 146_096) / 146_097;
  const doe = z - era * 146_097;
  const yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
  const doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const mp = (5 * doy + 2) / 153;
  const day = doy - (153 * mp + 2) / 5 + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  if (year < 1 || year > 9999) return -1;
  p = decimal(<u64>year, 4, p);
  store<u8>(p++, 45);
  p = decimal(<u64>month, 2, p);
  store<u8>(p++, 45);
  p = decimal(<u64>day, 2, p);
  store<u8>(p++, 32);
  const seconds = micros / 1_000_000;
  p = decimal(<u64>(seconds / 3600), 2, p);
  store<u8>(p++, 58);
  p = decimal(<u64>((seconds / 60) % 60), 2, p);
  store<u8>(p++, 58);
  p = decimal(<u64>(seconds % 60), 2, p);
  let fraction = micros % 1_000_000;
  if (fraction) {
    store<u8>(p++, 46);
    let digits = 6;
    while (fraction % 10 == 0) {
      fraction /= 10;
      digits--;
    }
    p = decimal(<u64>fraction, digits, p);
  }
  store<u8>(p++, 43);
  store<u16>(p, 0x3030);
  return p + 2;
}

const NUMERIC_NEGATIVE = 0x4000;
/** Base-10000 digit d of the binary numeric at s (0 outside its ndigits). */
function numericDigit(s: usize, ndigits: i32, d: i32): u32 {
  return d >= 0 && d < ndigits ? <u32>be16(s + 8 + 2 * d) : 0;
}
/**
 * A numeric's text (numeric_out) from its binary form at s (numeric_send: digits, weight, sign, display scale, then
 * the base-10000 digits); -1 for NaN and the infinities.
 */
function numericText(s: usize, length: i32, p: usize): isize {
  if (length < 8) return -1;
  const ndigits = be16(s);
  const weight = be16(s + 2);
  const sign = be16(s + 4) & 0xffff;
  const dscale = be16(s + 6);
  if ((sign != 0 && sign != NUMERIC_NEGATIVE) || ndigits < 0 || length != 8 + 2 * ndigits || dscale < 0) return -1;
  // At most 64 bytes of text (textRows' room): a sign, the integer's groups, a point and the scale's digits.
  if (2 + (weight < 0 ? 1 : 4 * (weight + 1)) + 1 + dscale > 64) return -1;
  if (sign == NUMERIC_NEGATIVE) store<u8>(p++, 45);
  let d = 0;
  if (weight < 0) {
    d = weight + 1;
    store<u8>(p++, 48);
  } else
    for (d = 0; d <= weight; d++) {
      const g = numericDigit(s, ndigits, d);
      if (g > 9999) return -1;
      p = d == 0 ? decimal(g, 1, p) : decimal(g, 4, p);
    }
  if (dscale > 0) {
    store<u8>(p++, 46);
    const end = p + dscale;
    for (let written = 0; written < dscale; d++, written += 4) {
      const g = numericDigit(s, ndigits, d);
      if (g > 9999) return -1;
      decimal(g, 4, p + written);
    }
    p = end;
  }
  return p;
}

/**
 * The binary COPY rows [start, end) (copyBinaryRows: no header, no trailer), each of `fields` columns of the kinds at
 * `kinds` (BINARY_KIND_*, one byte a column), written at `out` as COPY's text format writes the same rows, each ending
 * in a newline: true, the end in textEnd. False for a row of another width, a value of the wrong size
 * for its kind, or one the text is not written here for (a time outside the years 1 to 9999, a numeric's NaN or
 * infinity): the caller reads the page in text instead.
 */
export function textFromBinary(start: usize, end: usize, out: usize, fields: i32, kinds: usize): bool {
  let s = start;
  let p = out;
  while (s < end) {
    if (s + 2 > end || be16(s) != fields) return false;
    s += 2;
    for (let f = 0; f < fields; f++) {
      if (f) store<u8>(p++, 9);
      if (s + 4 > end) return false;
      const length = be32(s);
      s += 4;
      if (length == -1) {
        store<u16>(p, 0x4e5c);
        p += 2;
        continue;
      }
      if (length < 0 || s + <usize>length > end) return false;
      const kind = <i32>load<u8>(kinds + f);
      if (kind == BINARY_KIND_TEXT) p = copyText(s, s + length, p);
      else if (kind == BINARY_KIND_JSONB) {
        // jsonb_send: its version (1), then its text.
        if (length < 1 || at(s) != 1) return false;
        p = copyText(s + 1, s + length, p);
      } else if (kind == BINARY_KIND_INT8) {
        if (length != 8) return false;
        p = int8Text(be64(s), p);
      } else if (kind == BINARY_KIND_TIMESTAMPTZ) {
        if (length != 8) return false;
        const q = timestampText(be64(s), p);
        if (q < 0) return false;
        p = q;
      } else if (kind == BINARY_KIND_NUMERIC) {
        const q = numericText(s, length, p);
        if (q < 0) return false;
        p = q;
      } else return false;
      s += length;
    }
    store<u8>(p++, 10);
  }
  textEnd = p;
  return true;
}
