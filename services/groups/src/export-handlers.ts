import type { groupsV1 } from '@mileage/proto';
import { provisioningEventRepresentation, trailOldestFirst } from '@mileage/runtime/audit';
import { snapshotInOrganization, type Knex } from '@mileage/runtime/database';
import { dateToTimestamp, isUuid } from '@mileage/runtime/formats';
import { errors, type Handlers, requireOrganization } from '@mileage/runtime/grpc';
import { writeExportPart } from '@mileage/runtime/storage';
import { GROUP_RESOURCE_TYPE, GROUP_SCHEMA, resourceMeta } from '@mileage/scim-domain';
import type { GroupsServerDeps } from './organization-context';

/** Groups per statement while the part is read. */
const PAGE_ROWS = 1_000;
/**
 * The group writes of the provisioning trail, oldest first: the Users export job merges it with its own entries into
 * the archive's `provisioning_events.jsonl` (it knows the file by this name), so it is no file of the archive itself.
 */
const TRAIL_PART = 'provisioning_events.groups.jsonl';

/**
 * The Groups service's part of an organization export (CONTRACT §8), from one snapshot of its schema: each group's
 * SCIM representation with its members (their ids and `$ref`s: the people are the Users part's), plus `admins`; and
 * the group writes of its provisioning trail.
 */
export function exportHandlers(
  deps: GroupsServerDeps,
): Pick<Handlers<groupsV1.GroupsServiceServer>, 'writeExportPart'> {
  return {
    async writeExportPart(request, ctx) {
      if (!isUuid(request.exportId))
        throw errors.invalidArgument('export_id must be a UUID', [{ field: 'export_id', description: 'a UUID' }]);
      const { archives, knex } = deps;
      if (!archives) throw errors.unavailable('organization exports are not configured on this installation');
      const organizationId = requireOrganization(ctx);
      const files = await snapshotInOrganization(knex, organizationId, async (trx) => [
        await writeExportPart(
          archives,
          request.exportId,
          'groups.jsonl',
          groups(trx, organizationId, deps.scimBaseUrl ?? DEFAULT_SCIM_BASE_URL),
        ),
        await writeExportPart(archives, request.exportId, TRAIL_PART, trail(trx, organizationId)),
      ]);
      return { files };
    },
  };
}

/** Where `meta.location` and the members' `$ref` point when the process was given no SCIM_BASE_URL. */
const DEFAULT_SCIM_BASE_URL = 'http://127.0.0.1:8080/scim/v2';

interface TeamRow {
  id: string;
  display_name: string;
  external_id: string | null;
  created_at: Date;
  modified_at: Date;
  version: string;
}

async function* groups(trx: Knex.Transaction, organizationId: number, scimBase: string): AsyncGenerator<string> {
  for (let after = 0; ;) {
    const { rows } = await trx.raw<{ rows: TeamRow[] }>(
      `SELECT id, display_name, external_id, created_at, modified_at, version FROM teams
        WHERE organization_id = ? AND id > ? ORDER BY id LIMIT ?`,
      [organizationId, after, PAGE_ROWS],
    );
    if (!rows.length) return;
    const { rows: members } = await trx.raw<{ rows: { team_id: string; user_id: string; is_admin: boolean }[] }>(
      `SELECT team_id, user_id, is_admin FROM team_members WHERE organization_id = ? AND team_id = ANY(?::bigint[])
        ORDER BY team_id, user_id`,
      [organizationId, rows.map((r) => Number(r.id))],
    );
    const byTeam = new Map<string, { user_id: string; is_admin: boolean }[]>();
    for (const m of members) {
      const team = byTeam.get(String(m.team_id));
      if (team) team.push(m);
      else byTeam.set(String(m.team_id), [m]);
    }
    for (const row of rows) {
      const team = byTeam.get(String(row.id)) ?? [];
      yield `${JSON.stringify({
        schemas: [GROUP_SCHEMA],
        id: String(row.id),
        ...(row.external_id ? { externalId: row.external_id } : {}),
        displayName: row.display_name,
        members: team.map((m) => ({ value: m.user_id, $ref: `${scimBase}/Users/${m.user_id}`, type: 'User' })),
        admins: team.filter((m) => m.is_admin).map((m) => m.user_id),
        meta: resourceMeta(
          'Group',
          {
            createTime: dateToTimestamp(row.created_at),
            updateTime: dateToTimestamp(row.modified_at),
            version: Number(row.version),
          },
          `${scimBase}/Groups/${row.id}`,
        ),
      })}\n`;
    }
    if (rows.length < PAGE_ROWS) return;
    after = Number(rows[rows.length - 1]!.id);
  }
}

/** The columns the Groups trail's part reads (trailOldestFirst). */
type GroupsTrailColumns = {
  actor: string;
  operation: string;
  team_id: string;
  request_id: string | null;
  before: unknown;
  after: unknown;
  members_added: string[] | null;
  members_removed: string[] | null;
};

/**
 * The group writes of the trail as GET /v1/organization/provisioning-events shows them (an id unique across the
 * trail's owners, the credential that acted, the resource), with what the trail adds: the group's attributes before
 * and after, and the members a change by difference added and removed. Times to the microsecond (trailOldestFirst).
 */
async function* trail(trx: Knex.Transaction, organizationId: number): AsyncGenerator<string> {
  const columns =
    'actor, operation, team_id::text AS team_id, request_id, before, after, members_added, members_removed';
  for await (const row of trailOldestFirst<GroupsTrailColumns>(trx, 'provisioning_audit', columns, organizationId)) {
    yield `${JSON.stringify({
      ...provisioningEventRepresentation('groups', {
        id: row.id,
        at: row.at,
        actor: row.actor,
        action: row.operation,
        resourceType: GROUP_RESOURCE_TYPE.name,
        resourceId: row.team_id,
        requestId: row.request_id,
      }),
      ...(row.before !== null ? { before: row.before } : {}),
      ...(row.after !== null ? { after: row.after } : {}),
      ...(row.members_added !== null ? { members_added: row.members_added } : {}),
      ...(row.members_removed !== null ? { members_removed: row.members_removed } : {}),
    })}\n`;
  }
}
