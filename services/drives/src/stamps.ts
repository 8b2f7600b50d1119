import { dateToTimestamp, pgUtcTextToTimestamp, type WireTimestamp } from '@mileage/runtime/worker';
import pg from 'pg';

/** A timestamp as pg returns it: a Date, or already a wire Timestamp from the WIRE_TIMESTAMPS parser. */
export type Stamp = Date | WireTimestamp;

const TIMESTAMPTZ_OID = 1184;
const defaultTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (text: string) => Date;

/**
 * Query option for the list statements: timestamptz columns straight to the wire's `{ seconds, nanos }`. PostgreSQL's
 * UTC text is read by a small parser; building a Date (and, before, an ISO string that the generated code parsed
 * again) per time was a tenth of this service's time on a page of drives. Any other text (a session in another time
 * zone) goes through pg's own parser.
 */
export const WIRE_TIMESTAMPS = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    return oid === TIMESTAMPTZ_OID ? wireFromText : pg.types.getTypeParser(oid, format);
  },
};

/** A timestamptz's text (as a statement's result or COPY gives it) as a wire Timestamp. */
export const wireFromText = (text: string): WireTimestamp =>
  pgUtcTextToTimestamp(text) ?? dateToTimestamp(defaultTimestamptz(text));

export const wire = (t: Stamp): WireTimestamp => (t instanceof Date ? dateToTimestamp(t) : t);
