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
 * Memberships per statement: a page of groups can hold any number of members (one group of all the company's people),
 * and the service's thread turns each statement's rows into objects and lines in one go, with other organizations'
 * requests waiting behind it.
 */
export const MEMBER_PAGE_ROWS = 2_000;
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

interface MemberRow {
  team_id: string;
  user_id: string;
  is_admin: boolean;
}

async function* groups(trx: Knex.Transaction, organizationId: number, scimBase: string): AsyncGenerator<string> {
  for (let after = 0; ;) {
    const { rows } = await trx.raw<{ rows: TeamRow[] }>(
      `SELECT id, display_name, external_id, created_at, modified_at, version FROM teams
        WHERE organization_id = ? AND id > ? ORDER BY id LIMIT ?`,
      [organizationId, after, PAGE_ROWS],
    );
    if (!rows.length) return;
    const members = membersInOrder(trx, organizationId, rows[0]!.id, rows[rows.length - 1]!.id);
    for (const row of rows) {
      // The line is JSON.stringify's of the whole group, its members written a statement's worth at a time.
      const head = JSON.stringify({
        schemas: [GROUP_SCHEMA],
        id: String(row.id),
        ...(row.external_id ? { externalId: row.external_id } : {}),
        displayName: row.display_name,
      });
      const written: string[] = [];
      const admins: string[] = [];
      for await (const team of members.of(row.id)) {
        written.push(
          team
            .map((m) => JSON.stringify({ value: m.user_id, $ref: `${scimBase}/Users/${m.user_id}`, type: 'User' }))
            .join(','),
        );
        for (const m of team) if (m.is_admin) admins.push(m.user_id);
      }
      const tail = JSON.stringify({
        admins,
        meta: resourceMeta(
          'Group',
          {
            createTime: dateToTimestamp(row.created_at),
            updateTime: dateToTimestamp(row.modified_at),
            version: Number(row.version),
          },
          `${scimBase}/Groups/${row.id}`,
        ),
      });
      yield `${head.slice(0, -1)},"members":[${written.join(',')}],${tail.slice(1)}\n`;
    }
    if (rows.length < PAGE_ROWS) return;
    after = Number(rows[rows.length - 1]!.id);
  }
}

/**
 * The memberships of the groups `first` to `last` (a page of them), in (group, user) order, MEMBER_PAGE_ROWS a
 * statement: `of(team)` gives a group's, in the statements' slices, once the groups before it were asked for.
 */
function membersInOrder(trx: Knex.Transaction, organizationId: number, first: string, last: string) {
  let rows: MemberRow[] = [];
  let at = 0;
  let done = false;
  // The last membership read (at first, one before the first group's): the next statement starts after it.
  let key: [string, string] = [first, ''];
  const more = async () => {
    ({ rows } = await trx.raw<{ rows: MemberRow[] }>(
      `SELECT team_id, user_id, is_admin FROM team_members
        WHERE organization_id = ? AND team_id <= ? AND (team_id, user_id) > (?::bigint, ?::bpchar)
        ORDER BY team_id, user_id LIMIT ?`,
      [organizationId, last, key[0], key[1], MEMBER_PAGE_ROWS],
    ));
    at = 0;
    done = rows.length < MEMBER_PAGE_ROWS;
    const end = rows[rows.length - 1];
    if (end) key = [end.team_id, end.user_id];
  };
  return {
    async *of(team: string): AsyncGenerator<MemberRow[]> {
      for (;;) {
        if (at === rows.length) {
          if (done) return;
          await more();
        }
        const start = at;
        while (at < rows.length && rows[at]!.team_id === team) at++;
        if (at > start) yield rows.slice(start, at);
        if (at < rows.length) return;
      }
    },
  };
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
