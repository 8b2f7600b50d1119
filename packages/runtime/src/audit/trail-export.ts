import type { Knex } from 'knex';

/** The trail's owners, in the order that breaks a tie of time between their entries. */
export const TRAIL_OWNERS = ['users', 'groups'] as const;
export type TrailOwner = (typeof TRAIL_OWNERS)[number];

/** An entry of the provisioning trail as GET /v1/organization/provisioning-events and the export's file show it. */
export interface ProvisioningEventRepresentation {
  /** Unique across the trail's owners: the owner's name and its id, e.g. "users-17". */
  id: string;
  at: string;
  /** The credential: an OAuth client id, or `scim_token:<id>` for a SCIM secret token. */
  credential: string;
  action: string;
  resource_type: string;
  resource_id: string;
  /** Only writes that happened are in the trail (a refused request changed nothing). */
  outcome: 'succeeded';
  request_id: string;
}

/** One owner's trail entry in the representation every reader of the trail shows. */
export function provisioningEventRepresentation(
  owner: TrailOwner,
  entry: {
    id: string | number;
    at: string;
    actor: string;
    action: string;
    resourceType: string;
    resourceId: string;
    requestId?: string | null;
  },
): ProvisioningEventRepresentation {
  return {
    id: `${owner}-${entry.id}`,
    at: entry.at,
    credential: entry.actor,
    action: entry.action,
    resource_type: entry.resourceType,
    resource_id: entry.resourceId,
    outcome: 'succeeded',
    request_id: entry.requestId ?? '',
  };
}

/** An entry of an owner's provisioning trail as an export reads it: its id, its exact time, and the columns asked for. */
export type TrailEntryRow = Record<string, unknown> & { id: string; at: string };

/**
 * An organization's entries of an owner's provisioning trail (`table`), oldest first in the order (time, id) every
 * owner's trail shares, `pageRows` per statement, in the caller's transaction (an export's snapshot). `at` is the
 * time exactly as stored — UTC to the microsecond, fixed width, so it sorts as text — which lets the owners' parts be
 * merged into one trail without ties broken wrongly (the Users export job merges them). `columns` is the owner's own
 * column list, from its code (never from input), and `Columns` their types.
 */
export async function* trailOldestFirst<Columns extends object = Record<string, unknown>>(
  trx: Knex.Transaction,
  table: string,
  columns: string,
  organizationId: number,
  pageRows = 1_000,
): AsyncGenerator<TrailEntryRow & Columns> {
  let after = { at: '-infinity', id: '0' };
  for (;;) {
    const { rows } = await trx.raw<{ rows: (TrailEntryRow & Columns)[] }>(
      `SELECT id::text AS id, to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, ${columns}
         FROM ?? WHERE organization_id = ? AND (occurred_at, id) > (?::timestamptz, ?::bigint)
        ORDER BY occurred_at, id LIMIT ?`,
      [table, organizationId, after.at, after.id, pageRows],
    );
    yield* rows;
    if (rows.length < pageRows) return;
    after = rows[rows.length - 1]!;
  }
}
