// Parts of the API's representation of a drive that the API's pages (render.ts) and the export's lines
// (export-lines.ts) both render: in a module without the generated messages, since the export's worker loads it.
import type { DriveDetails } from '@mileage/drive-json';
import { apiTime, isoToTimestamp } from '@mileage/runtime/worker';
import type { CommentRow, StoredLocation } from './rows';
import { wire } from './stamps';

/** A stored location in the API's shape. */
export function place(stored: StoredLocation | null): DriveDetails['start'] {
  if (!stored) return null;
  const a = stored.address;
  return {
    name: stored.name,
    lat: stored.lat ?? null,
    lon: stored.lon ?? null,
    time: apiTime(stored.time !== undefined ? isoToTimestamp(stored.time) : undefined),
    address: a
      ? { country: a.country, state: a.state, city: a.city, street: a.street, postal_code: a.postalCode }
      : null,
  };
}

/** A review comment in the API's shape. */
export function reviewCommentOf(c: CommentRow) {
  return { id: String(Number(c.id)), text: c.text, created_at: apiTime(wire(c.created_at)), user_email: c.user_email };
}
