// The Drives export reads its pages in COPY's binary format (export-pages.ts): PostgreSQL spends less of its CPU on a
// binary value than on its text (a time or a number is not printed). The WebAssembly renderer writes those rows as
// COPY's text of the same rows (textFromBinary, assembly/export-render.ts) and renders that text, as it did before.

import pg from 'pg';

/** How textFromBinary writes a column's binary value (its kind, a byte a column; the generated facts carry them). */
export const BINARY_KINDS = { TEXT: 1, JSONB: 2, INT8: 3, TIMESTAMPTZ: 4, NUMERIC: 5 } as const;

const { BPCHAR, INT8, JSONB, NUMERIC, TEXT, TIMESTAMPTZ, VARCHAR } = pg.types.builtins;
/** PostgreSQL's types (their OIDs, as node-postgres names them) whose binary value textFromBinary writes, and how. */
const KIND_OF_TYPE: ReadonlyMap<number, number> = new Map([
  [TEXT, BINARY_KINDS.TEXT],
  [BPCHAR, BINARY_KINDS.TEXT], // char(n): its stored text, blanks included, as its text output
  [VARCHAR, BINARY_KINDS.TEXT],
  [JSONB, BINARY_KINDS.JSONB],
  [INT8, BINARY_KINDS.INT8],
  [TIMESTAMPTZ, BINARY_KINDS.TIMESTAMPTZ],
  [NUMERIC, BINARY_KINDS.NUMERIC],
]);

/**
 * The kinds of a statement's columns, by their types (JoinedSnapshot.columnTypes), or undefined when one of them is of
 * a type textFromBinary does not write: the statement is then read in text.
 */
export function binaryKinds(types: readonly number[]): Uint8Array | undefined {
  const kinds = types.map((type) => KIND_OF_TYPE.get(type));
  return kinds.every((kind) => kind !== undefined) ? Uint8Array.from(kinds) : undefined;
}
