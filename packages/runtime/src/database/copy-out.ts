import type pg from 'pg';
import { PageBytes } from '../storage/part';

/**
 * `COPY (<query>) TO STDOUT` in PostgreSQL's text format on `client`, each row handed to `onRow` as it arrives (its
 * bytes, ending in a newline; a view of the connection's buffer, valid only during the call). PostgreSQL's own
 * output: one message per row, the columns as their types' text separated by tabs, `\N` for NULL, and backslash
 * escapes for a backslash and control characters (copyTextFields reads them). In the binary `format` each message is
 * a row as copyBinaryRows reads them, the first one led by the format's header and the last one its trailer. Run as
 * node-postgres runs pg-cursor and pg-copy-streams, as a custom query object whose messages come to its handlers.
 */
export function copyOut(
  client: pg.Client,
  query: string,
  onRow: (row: Buffer) => void,
  format: 'text' | 'binary' = 'text',
): Promise<void> {
  return new Promise((resolve, reject) => {
    const submittable = {
      submit(connection: { query(text: string): void }) {
        connection.query(`COPY (${query}) TO STDOUT${format === 'binary' ? ' (FORMAT binary)' : ''}`);
      },
      handleCopyData(message: { chunk: Buffer }) {
        onRow(message.chunk);
      },
      // node-postgres lets go of a query at its error (no ReadyForQuery follows for it): it ends there.
      handleError: reject,
      handleReadyForQuery: () => resolve(),
      // The other messages of a COPY's exchange carry nothing.
      handleCommandComplete() {},
      handleRowDescription() {},
      handleDataRow() {},
      handleEmptyQuery() {},
      handlePortalSuspended() {},
      handleCopyInResponse() {
        reject(new Error('copyOut runs COPY TO, not COPY FROM'));
      },
    };
    void client.query(submittable as unknown as pg.QueryConfig);
  });
}

/**
 * The rows of a `COPY (<query>) TO STDOUT` (copyOutRows), kept as the bytes PostgreSQL sent: a page of rows waiting to
 * be rendered is one buffer outside the JavaScript heap, not thousands of strings for its garbage collector to copy
 * while they wait. Each row is decoded as it is read (`row`), and its strings die young.
 */
export class CopiedRows {
  constructor(
    /** The rows' bytes as PostgreSQL sent them, for a reader of bytes (rowStart, rowEnd). */
    readonly bytes: Buffer,
    /** Where each row ends (its newline's offset). */
    private readonly ends: number[],
  ) {}

  get length(): number {
    return this.ends.length;
  }

  /** Row `i`'s columns (copyTextFields). */
  row(i: number): (string | null)[] {
    return copyTextFields(this.bytes.toString('utf8', this.rowStart(i), this.ends[i]));
  }

  /** Row `i`'s first column, without decoding the others (a key: its text holds no escape). */
  first(i: number): string {
    const start = this.rowStart(i);
    const tab = this.bytes.indexOf(9, start);
    return this.bytes.toString('utf8', start, tab < 0 || tab > this.ends[i]! ? this.ends[i] : tab);
  }

  /**
   * Row `i`'s first column as the integer it holds (a key: digits only), read from its bytes without a string; a text
   * of more than 15 digits, or anything but digits, as Number reads it.
   */
  firstInteger(i: number): number {
    const start = this.rowStart(i);
    const bytes = this.bytes;
    let value = 0;
    for (let k = start; k - start <= 15; k++) {
      const c = bytes[k]!;
      if (c === 9 || k === this.ends[i]) return k === start ? Number(this.first(i)) : value;
      if (c < 48 || c > 57) break;
      value = value * 10 + (c - 48);
    }
    return Number(this.first(i));
  }

  /** Where row `i` starts in `bytes`. */
  rowStart(i: number): number {
    return i === 0 ? 0 : this.ends[i - 1]! + 1;
  }

  /** Where row `i` ends in `bytes`: its newline's offset. */
  rowEnd(i: number): number {
    return this.ends[i]!;
  }
}

/**
 * The rows of `COPY (<query>) TO STDOUT` on `client`, for a page of rows, in `page` (emptied first). A reader of many
 * pages hands the same buffers again once it is done with their rows: a new buffer outside the heap per page is
 * memory the garbage collector counts toward its next collection, and must collect to give back.
 */
export async function copyOutRows(client: pg.Client, query: string, page = new PageBytes()): Promise<CopiedRows> {
  page.clear();
  const ends: number[] = [];
  await copyOut(client, query, (row) => {
    page.writeBytes(row);
    ends.push(page.length - 1);
  });
  return new CopiedRows(page.take(), ends);
}

/** The binary COPY format's header (PostgreSQL's signature, no flags, no extension), which leads its first message. */
const BINARY_HEADER = Buffer.from('PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0', 'latin1');

/**
 * The rows of `COPY (<query>) TO STDOUT (FORMAT binary)` on `client`, in `page` (emptied first) as PostgreSQL sent
 * them without the format's header and trailer: each row its number of columns (16 bits) and each column its length (32
 * bits, -1 for NULL) and its type's binary value, all big-endian. Binary values cost PostgreSQL less to send than
 * their text (a time or a number is not printed); the reader decodes them (the Drives export's renderer).
 */
export async function copyBinaryRows(client: pg.Client, query: string, page = new PageBytes()): Promise<BinaryRows> {
  page.clear();
  let rows = 0;
  let first = true;
  let fault: Error | undefined;
  await copyOut(
    client,
    query,
    (message) => {
      let row = message;
      if (first) {
        first = false;
        if (!message.subarray(0, BINARY_HEADER.length).equals(BINARY_HEADER))
          fault ??= new Error('a binary COPY without its header');
        row = message.subarray(BINARY_HEADER.length);
      }
      // The trailer: a row of -1 columns.
      if (row.length === 2 && row.readInt16BE(0) === -1) return;
      if (row.length) rows++;
      page.writeBytes(row);
    },
    'binary',
  );
  if (fault) throw fault;
  return { bytes: page.take(), length: rows };
}

/** The type of each column of `query`'s result (PostgreSQL's type OIDs), from its description: nothing is read. */
export async function columnTypes(client: pg.Client, query: string): Promise<number[]> {
  const { fields } = await client.query(`SELECT * FROM (${query}) AS described LIMIT 0`);
  return fields.map((field) => field.dataTypeID);
}

/** A page of binary COPY rows (copyBinaryRows): their bytes, one row after the other, and how many. */
export interface BinaryRows {
  readonly bytes: Buffer;
  readonly length: number;
}

/** COPY's escapes in its text format (PostgreSQL's CopyAttributeOutText); any other escaped character is itself. */
export const COPY_ESCAPES: Readonly<Record<string, string>> = {
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
};
const ESCAPE = /\\(.)/gs;

/**
 * The columns of one row of COPY's text format (its line without the newline): each column's text, or null for
 * NULL (`\N`), its escapes read. A tab or a newline in a value is escaped, so the row splits at every tab.
 */
export function copyTextFields(line: string): (string | null)[] {
  const fields: (string | null)[] = line.split('\t');
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (!field.includes('\\')) continue;
    fields[i] = field === '\\N' ? null : field.replace(ESCAPE, (_, c: string) => COPY_ESCAPES[c] ?? c);
  }
  return fields;
}

/**
 * A statement's `?` placeholders filled with integers, written into its text: COPY takes no parameters. Only safe
 * integers are accepted, so nothing but digits (and a sign) enters the statement.
 */
export function withIntegers(text: string, values: readonly number[]): string {
  let i = 0;
  const filled = text.replace(/\?/g, () => {
    const value = values[i++];
    if (!Number.isSafeInteger(value)) throw new Error(`a COPY statement's value ${i} is not an integer`);
    return String(value);
  });
  if (i !== values.length) throw new Error(`a COPY statement has ${i} placeholders and ${values.length} values`);
  return filled;
}
