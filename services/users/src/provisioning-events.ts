import type { scimAuditV1 } from '@mileage/proto';
import { millisToTimestamp, type Knex, type TraceContext } from '@mileage/runtime';
import { sql } from './database';
import { EVENT_TIME_KEY } from './migrations/20261126100000_organizations';

/** The most events one page may ask for. */
export const MAX_EVENTS_PAGE = 1000;

interface EventRow {
  id: string;
  at_ms: string;
  actor: string;
  operation: string;
  user_id: string | null;
  scim_token_id: string | null;
  request_id: string | null;
}

/** Where a page continues from: the (time, id) of the last event of the page before. */
export interface EventPosition {
  atMs: number;
  id: number;
}

/**
 * A page of one organization's provisioning trail (its users' changes, its SCIM tokens' creation and revocation),
 * newest first, in the order (time to the millisecond, id) of provisioning_audit_organization_time_idx: a position
 * made from an event's time as the API prints it continues exactly after that event. `hasMore` tells whether older
 * events remain. Runs in the organization's transaction (inOrganization).
 */
export async function listProvisioningEvents(
  trx: Knex.Transaction,
  organizationId: number,
  page: { limit: number; before?: EventPosition },
  trace?: TraceContext,
): Promise<{ events: scimAuditV1.ProvisioningEvent[]; hasMore: boolean }> {
  const before = page.before
    ? `AND (${EVENT_TIME_KEY}, id) < (timestamp 'epoch' + ?::bigint * interval '1 millisecond', ?::bigint)`
    : '';
  const text = `
    SELECT id, (extract(epoch FROM ${EVENT_TIME_KEY}) * 1000)::bigint AS at_ms, actor, operation, user_id,
           scim_token_id, request_id
      FROM provisioning_audit
     WHERE organization_id = ? ${before}
     ORDER BY ${EVENT_TIME_KEY} DESC, id DESC
     LIMIT ?`;
  const bindings = [organizationId, ...(page.before ? [page.before.atMs, page.before.id] : []), page.limit + 1];
  const { rows } = await sql(trace, 'SELECT', text, async () => trx.raw<{ rows: EventRow[] }>(text, bindings));
  return {
    events: rows.slice(0, page.limit).map((row) => ({
      id: Number(row.id),
      time: millisToTimestamp(Number(row.at_ms)),
      actor: row.actor,
      action: row.operation,
      resourceType: row.user_id !== null ? 'User' : 'ScimToken',
      resourceId: row.user_id ?? row.scim_token_id!,
      requestId: row.request_id ?? '',
    })),
    hasMore: rows.length > page.limit,
  };
}
