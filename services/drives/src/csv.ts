/** Characters that make a CSV field quoted (RFC 4180): the delimiter, the quote and line breaks. */
export const CSV_QUOTED_CHARACTERS = ',"\r\n';
const NEEDS_QUOTES = new RegExp(`[${CSV_QUOTED_CHARACTERS}]`);

/**
 * One CSV record and its newline, as csv-stringify writes it with its defaults (csv.test.ts compares both): a field is
 * quoted, its quotes doubled, only when it holds a comma, a quote or a line break. Per row, csv-stringify's option
 * handling cost more than the row.
 */
export function csvLine(fields: readonly (string | number)[]): string {
  let line = '';
  for (let i = 0; i < fields.length; i++) {
    if (i) line += ',';
    line += csvField(String(fields[i]));
  }
  return `${line}\n`;
}

/** One field of a CSV record: quoted, its quotes doubled, when it holds a comma, a quote or a line break. */
export const csvField = (text: string): string => (NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text);
