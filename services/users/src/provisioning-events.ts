import type { scimAuditV1 } from '@mileage/proto';
import { dateToTimestamp } from '@mileage/runtime/formats';
import { type Knex } from '@mileage/runtime/database';
import { type TraceContext } from '@mileage/runtime/telemetry';
import { sql } from './database';

/** The most events one page may ask for. */
export const MAX_EVENTS_PAGE = 1000;

/** The columns of a Users trail entry that its readers (the API's list, the export's part) show. */
export interface TrailColumns {
  actor: string;
  operation: string;
  user_id: string | null;
  scim_token_id: string | null;
  export_id: string | null;
  request_id: string | null;
}

interface EventRow extends TrailColumns {
  id: string;
  occurred_at: Date;
}

/** Where a page continues from: the last event of the page before (its time as the API printed it, and its id). */
export interface EventPosition {
  time: Date;
  id: number;
}

/**
 * A page of one organization's provisioning trail (its users' changes, its SCIM tokens' creation and revocation),
 * newest first in the order (time, id) of provisioning_audit_organization_time_idx; `hasMore` tells whether older
 * events remain. Runs in the organization's transaction (inOrganization).
 *
 * The API prints times to the millisecond, the trail keeps microseconds: a page continues from the exact time of the
 * event named by the position's id (the printed time only when the organization has no such event). The keyset is a
 * plain comparison of columns, which row-level security lets the index serve (any function of a column would not be).
 */
export async function listProvisioningEvents(
  trx: Knex.Transaction,
  organizationId: number,
  page: { limit: number; before?: EventPosition },
  trace?: TraceContext,
): Promise<{ events: scimAuditV1.ProvisioningEvent[]; hasMore: boolean }> {
  let before: [string | Date, number] | undefined;
  if (page.before) {
    const exact = `SELECT occurred_at::text AS at FROM provisioning_audit WHERE organization_id = ? AND id = ?`;
    const { rows } = await sql(trace, 'SELECT', exact, async () =>
      trx.raw<{ rows: { at: string }[] }>(exact, [organizationId, page.before!.id]),
    );
    before = [rows[0]?.at ?? page.before.time, page.before.id];
  }
  const text = `
    SELECT id, occurred_at, actor, operation, user_id, scim_token_id, export_id, request_id
      FROM provisioning_audit
     WHERE organization_id = ? ${before ? 'AND (occurred_at, id) < (?::timestamptz, ?)' : ''}
     ORDER BY occurred_at DESC, id DESC
     LIMIT ?`;
  const bindings = [organizationId, ...(before ?? []), page.limit + 1];
  const { rows } = await sql(trace, 'SELECT', text, async () => trx.raw<{ rows: EventRow[] }>(text, bindings));
  return {
    events: rows.slice(0, page.limit).map((row) => ({
      id: Number(row.id),
      time: dateToTimestamp(row.occurred_at),
      actor: row.actor,
      action: row.operation,
      ...trailResource(row),
      requestId: row.request_id ?? '',
    })),
    hasMore: rows.length > page.limit,
  };
}

/** What a Users trail entry concerns: a user, a SCIM token, or an export (the one of its columns that is set). */
export function trailResource(row: {
  user_id: string | null;
  scim_token_id: string | null;
  export_id: string | null;
}): { resourceType: 'User' | 'ScimToken' | 'Export'; resourceId: string } {
  if (row.user_id !== null) return { resourceType: 'User', resourceId: row.user_id };
  if (row.scim_token_id !== null) return { resourceType: 'ScimToken', resourceId: row.scim_token_id };
  return { resourceType: 'Export', resourceId: row.export_id! };
}
