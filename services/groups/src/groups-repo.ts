import type { groupsV1, scimAuditV1 } from '@mileage/proto';
import { auditRow, filterSchema, GROUP_RESOURCE_TYPE, sqlFilterTable, type SqlCondition } from '@mileage/scim-domain';
import { dateToTimestamp } from '@mileage/runtime/formats';
import { errors } from '@mileage/runtime/grpc';
import { refuseReplayedAttestation } from '@mileage/runtime/audit';
import { sqlSpans, type Knex, type ReadStatements } from '@mileage/runtime/database';
import { type TraceContext } from '@mileage/runtime/telemetry';
import { requireMemberLimit } from './validation';

interface TeamRow {
  id: string;
  organization_id: string;
  display_name: string;
  external_id: string | null;
  created_at: Date;
  modified_at: Date;
  version: string;
  members: { user_id: string; is_admin: boolean; is_driver: boolean }[];
}

/** What a SCIM filter compares, in these tables: the Group declaration's owner fields → columns. */
export const GROUP_FILTER_TABLE = sqlFilterTable(filterSchema(GROUP_RESOURCE_TYPE), {
  scalars: {
    id: 'teams.id::text',
    display_name: 'teams.display_name',
    external_id: 'teams.external_id',
    create_time: 'teams.created_at',
    update_time: 'teams.modified_at',
  },
  multi: {
    members: {
      elements: '(SELECT user_id::text AS user_id FROM team_members WHERE team_members.team_id = teams.id) AS member',
      field: (name) => `member.${name}`,
    },
  },
  documents: {},
});

// Groups with their members in one statement, for any set of ids (prepared once per connection).
const GET_MANY_SQL = `
  SELECT t.id, t.organization_id, t.display_name, t.external_id, t.created_at, t.modified_at, t.version,
         coalesce(json_agg(json_build_object('user_id', m.user_id, 'is_admin', m.is_admin, 'is_driver', m.is_driver)
                  ORDER BY m.user_id) FILTER (WHERE m.user_id IS NOT NULL), '[]') AS members
    FROM teams t LEFT JOIN team_members m ON m.team_id = t.id
   WHERE t.organization_id = ? AND t.id = ANY(?::bigint[])
   GROUP BY t.id
   ORDER BY t.id`;
const ADMINISTERED_SQL = `SELECT team_id FROM team_members
  WHERE user_id = ? AND is_admin AND organization_id = ? ORDER BY team_id`;
const CHECK_ADMIN_SQL = `
  SELECT EXISTS (SELECT 1 FROM teams WHERE id = ? AND organization_id = ?) AS exists,
         EXISTS (SELECT 1 FROM team_members WHERE team_id = ? AND user_id = ? AND organization_id = ? AND is_admin)
           AS is_admin`;
// The organization's trail, newest first from a keyset position; times to the microsecond (a cursor must compare
// exactly with what is stored).
const EVENT_COLUMNS = `id, actor, operation, team_id, request_id,
  floor(extract(epoch FROM occurred_at))::bigint AS seconds, extract(microseconds FROM occurred_at)::bigint % 1000000 AS micros`;
const EVENTS_SQL = `SELECT ${EVENT_COLUMNS} FROM provisioning_audit WHERE organization_id = ?
  ORDER BY occurred_at DESC, id DESC LIMIT ?`;
const EVENTS_BEFORE_SQL = `SELECT ${EVENT_COLUMNS} FROM provisioning_audit WHERE organization_id = ?
    AND (occurred_at, id) < (timestamptz 'epoch' + ? * interval '1 second' + ? * interval '1 microsecond', ?)
  ORDER BY occurred_at DESC, id DESC LIMIT ?`;

interface EventRow {
  id: string;
  actor: string;
  operation: string;
  team_id: string;
  request_id: string | null;
  seconds: string;
  micros: string;
}

/** A page of the provisioning trail, newest first. */
export interface EventsPage {
  events: scimAuditV1.ProvisioningEvent[];
  hasMore: boolean;
}

function toGroup(row: TeamRow): groupsV1.Group {
  return {
    id: Number(row.id),
    organizationId: Number(row.organization_id),
    displayName: row.display_name,
    ...(row.external_id !== null ? { externalId: row.external_id } : {}),
    members: row.members.map((m) => ({ userId: m.user_id, isAdmin: m.is_admin, isDriver: m.is_driver })),
    createTime: dateToTimestamp(new Date(row.created_at)),
    updateTime: dateToTimestamp(new Date(row.modified_at)),
    version: Number(row.version),
  };
}

const sql = sqlSpans('groups');

/**
 * Whether group `groupId` of `organizationId` exists and `userId` administers it: one statement, run as a light read
 * (readInOrganization) on every group route.
 */
export async function checkAdmin(
  run: ReadStatements,
  organizationId: number,
  groupId: number,
  userId: string,
  trace?: TraceContext,
): Promise<{ exists: boolean; isAdmin: boolean }> {
  const { rows } = await sql(trace, 'SELECT', CHECK_ADMIN_SQL, () =>
    run<{ exists: boolean; is_admin: boolean }>(
      CHECK_ADMIN_SQL,
      [groupId, organizationId, groupId, userId, organizationId],
      'groups_check_admin_v2',
    ),
  );
  return { exists: rows[0]!.exists, isAdmin: rows[0]!.is_admin };
}

/** The members a change by difference added and removed, as the statements report them (for its audit entry). */
interface MemberChanges {
  added: string[];
  removed: string[];
}

/**
 * Data access for the `groups` schema, inside one organization: constructed over the transaction that declared it
 * (inOrganization), every statement also names it, so row-level security is the second wall, not the only one. Every
 * write bumps the group's version.
 */
export class GroupsRepository {
  constructor(
    private readonly db: Knex.Transaction,
    private readonly organizationId: number,
  ) {}

  async getMany(ids: number[], trace?: TraceContext): Promise<groupsV1.Group[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql(trace, 'SELECT', GET_MANY_SQL, async () =>
      this.db
        .raw<{ rows: TeamRow[] }>(GET_MANY_SQL, [this.organizationId, ids])
        .options({ name: 'groups_get_many_v2' }),
    );
    return rows.map(toGroup);
  }

  async get(id: number, trace?: TraceContext): Promise<groupsV1.Group | undefined> {
    return (await this.getMany([id], trace))[0];
  }

  async administeredBy(userId: string, trace?: TraceContext): Promise<groupsV1.Group[]> {
    const { rows } = await sql(trace, 'SELECT', ADMINISTERED_SQL, async () =>
      this.db
        .raw<{ rows: { team_id: string }[] }>(ADMINISTERED_SQL, [userId, this.organizationId])
        .options({ name: 'groups_administered_v2' }),
    );
    return this.getMany(
      rows.map((r) => Number(r.team_id)),
      trace,
    );
  }

  /** Whether the group exists in this organization (a group of another one does not) and `userId` administers it. */
  async create(displayName: string, members: groupsV1.Member[], trace?: TraceContext): Promise<groupsV1.Group> {
    const [row] = (await sql(trace, 'INSERT', 'INSERT INTO teams', async () =>
      this.db('teams').insert({ display_name: displayName, organization_id: this.organizationId }).returning('id'),
    )) as { id: string }[];
    const id = Number(row!.id);
    await this.insertMembers(id, members, trace);
    return (await this.get(id, trace))!;
  }

  /** Runs `change` on a locked group, then bumps its version; NOT_FOUND / ABORTED as appropriate. */
  private async change(
    groupId: number,
    expectedVersion: number,
    trace: TraceContext | undefined,
    audit: scimAuditV1.ProvisioningAudit | undefined,
    change: () => Promise<MemberChanges | void>,
  ): Promise<groupsV1.Group> {
    const group = { id: groupId, organization_id: this.organizationId };
    const locked = (await sql(trace, 'SELECT', 'SELECT version FROM teams FOR UPDATE', async () =>
      this.db('teams').select('version').where(group).forUpdate().first(),
    )) as { version: string } | undefined;
    if (!locked) throw errors.notFound(`group ${groupId} not found`, 'GROUP_NOT_FOUND');
    if (expectedVersion > 0 && Number(locked.version) !== expectedVersion) {
      throw errors.aborted('the group was changed by someone else (version mismatch)', 'VERSION_MISMATCH');
    }
    const members = await change();
    await sql(trace, 'UPDATE', 'UPDATE teams SET version', async () =>
      this.db('teams')
        .where(group)
        .update({ modified_at: this.db.fn.now(), version: this.db.raw('version + 1') }),
    );
    const changed = (await this.get(groupId, trace))!;
    if (audit) await this.recordAudit(audit, changed, trace, members);
    return changed;
  }

  /** The provisioning audit entry of a write, in the write's own transaction: both happen or neither does. */
  private async recordAudit(
    audit: scimAuditV1.ProvisioningAudit,
    group: groupsV1.Group,
    trace: TraceContext | undefined,
    members: MemberChanges | void,
  ): Promise<void> {
    const insert = this.db('provisioning_audit').insert({
      team_id: group.id,
      organization_id: this.organizationId,
      ...auditRow(audit, group.version),
      ...(members ? { members_added: members.added, members_removed: members.removed } : {}),
    });
    await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert).catch(refuseReplayedAttestation);
  }

  /** A page of the groups matching `condition`, by id, and how many match in all. */
  async list(
    condition: SqlCondition,
    offset: number,
    limit: number,
    excludeMembers: boolean,
    trace?: TraceContext,
  ): Promise<{ groups: groupsV1.Group[]; total: number }> {
    const where = `teams.organization_id = ? AND (${condition.sql})`;
    const bindings = [this.organizationId, ...condition.bindings];
    const countText = `SELECT count(*) AS total FROM teams WHERE ${where}`;
    const counted = await sql(trace, 'SELECT', countText, async () =>
      this.db.raw<{ rows: { total: string }[] }>(countText, bindings),
    );
    const total = Number(counted.rows[0]!.total);
    if (limit === 0 || offset >= total) return { groups: [], total };
    // As for users (UsersRepository.list): few matches through the filter's index, then sorted; many by the ordered walk.
    const columns = `id, organization_id, display_name, external_id, created_at, modified_at, version, '[]'::json AS members`;
    const pageText =
      total <= 10_000
        ? `WITH matches AS MATERIALIZED (SELECT ${columns} FROM teams WHERE ${where}) SELECT * FROM matches ORDER BY id LIMIT ? OFFSET ?`
        : `SELECT ${columns} FROM teams WHERE ${where} ORDER BY id LIMIT ? OFFSET ?`;
    const { rows } = await sql(trace, 'SELECT', pageText, async () =>
      this.db.raw<{ rows: TeamRow[] }>(pageText, [...bindings, limit, offset]),
    );
    if (excludeMembers) return { groups: rows.map(toGroup), total };
    return {
      groups: await this.getMany(
        rows.map((r) => Number(r.id)),
        trace,
      ),
      total,
    };
  }

  update(
    request: {
      id: number;
      displayName: string;
      replaceMembers: boolean;
      members: groupsV1.Member[];
      expectedVersion: number;
      externalId?: string | undefined;
      replaceExternalId: boolean;
      audit?: scimAuditV1.ProvisioningAudit | undefined;
    },
    trace?: TraceContext,
  ): Promise<groupsV1.Group> {
    return this.change(request.id, request.expectedVersion, trace, request.audit, async () => {
      await this.updateFields(request);
      if (request.replaceMembers) {
        const keep = request.members.map((m) => m.userId);
        await sql(trace, 'DELETE', 'DELETE FROM team_members', async () =>
          this.db('team_members')
            .where({ team_id: request.id, organization_id: this.organizationId })
            .whereNotIn('user_id', keep.length ? keep : [''])
            .delete(),
        );
        // Members who stay keep their roles: only new ones are inserted.
        await this.insertMembers(request.id, request.members, trace, 'ignore');
      }
    });
  }

  /**
   * The change by difference: leavers, then joiners (members already in keep their roles), then the name and
   * externalId when sent. The statements grow with the change, not with the group; the limit on members is checked on
   * the result, inside the transaction, so a change past it leaves nothing behind.
   */
  async patch(request: groupsV1.PatchGroupRequest, trace?: TraceContext): Promise<groupsV1.Group> {
    const changed = await this.change(request.id, request.expectedVersion, trace, request.audit, async () => {
      await this.updateFields(request);
      const removed = await this.deleteMembers(request.id, request.removeMemberIds, trace);
      const added = await this.insertMembers(request.id, request.addMembers, trace, 'ignore');
      return { added, removed };
    });
    requireMemberLimit(changed.members.length, 'add_members');
    return changed;
  }

  private async updateFields(request: {
    id: number;
    displayName: string;
    externalId?: string | undefined;
    replaceExternalId: boolean;
  }): Promise<void> {
    const fields = {
      ...(request.displayName ? { display_name: request.displayName } : {}),
      ...(request.replaceExternalId ? { external_id: request.externalId ?? null } : {}),
    };
    if (Object.keys(fields).length)
      await this.db('teams').where({ id: request.id, organization_id: this.organizationId }).update(fields);
  }

  setMemberRoles(groupId: number, member: groupsV1.Member, trace?: TraceContext): Promise<groupsV1.Group> {
    return this.change(groupId, 0, trace, undefined, async () => {
      await this.insertMembers(groupId, [member], trace, 'merge');
    });
  }

  removeMembers(groupId: number, userIds: string[], trace?: TraceContext): Promise<groupsV1.Group> {
    return this.change(groupId, 0, trace, undefined, async () => {
      await this.deleteMembers(groupId, userIds, trace);
    });
  }

  /** Removes these members (ids that are not members are ignored); the ids of those it removed. */
  private async deleteMembers(groupId: number, userIds: string[], trace: TraceContext | undefined): Promise<string[]> {
    if (userIds.length === 0) return [];
    const rows = (await sql(trace, 'DELETE', 'DELETE FROM team_members', async () =>
      this.db('team_members')
        .where({ team_id: groupId, organization_id: this.organizationId })
        .whereIn('user_id', userIds)
        .delete()
        .returning('user_id'),
    )) as { user_id: string }[];
    return rows.map((r) => r.user_id);
  }

  /** The organization's provisioning trail, newest first, strictly before `before` when given. */
  async provisioningEvents(
    limit: number,
    before: { seconds: number; micros: number; id: number } | undefined,
    trace?: TraceContext,
  ): Promise<EventsPage> {
    const [text, bindings] = before
      ? [EVENTS_BEFORE_SQL, [this.organizationId, before.seconds, before.micros, before.id, limit + 1]]
      : [EVENTS_SQL, [this.organizationId, limit + 1]];
    const { rows } = await sql(trace, 'SELECT', text, async () => this.db.raw<{ rows: EventRow[] }>(text, bindings));
    const hasMore = rows.length > limit;
    return { events: rows.slice(0, limit).map(toEvent), hasMore };
  }

  /**
   * Adds members with their roles; first records each new member's organization (this one: a user is a member only
   * in their own organization). A user already recorded in another one makes the database refuse the membership.
   * Answers the ids of the rows written (with 'ignore', the members who were not in yet).
   */
  private async insertMembers(
    groupId: number,
    members: groupsV1.Member[],
    trace: TraceContext | undefined,
    onConflict: 'ignore' | 'merge' | 'fail' = 'fail',
  ): Promise<string[]> {
    if (members.length === 0) return [];
    const organization_id = this.organizationId;
    await sql(trace, 'INSERT', 'INSERT INTO member_organizations', async () =>
      this.db('member_organizations')
        .insert(members.map((m) => ({ user_id: m.userId, organization_id })))
        .onConflict('user_id')
        .ignore(),
    );
    const rows = members.map((m) => ({
      team_id: groupId,
      user_id: m.userId,
      organization_id,
      is_admin: m.isAdmin,
      is_driver: m.isDriver,
    }));
    try {
      const inserted = (await sql(trace, 'INSERT', 'INSERT INTO team_members', async () => {
        const insert = this.db('team_members').insert(rows).returning('user_id');
        if (onConflict === 'ignore') return insert.onConflict(['team_id', 'user_id']).ignore();
        if (onConflict === 'merge') return insert.onConflict(['team_id', 'user_id']).merge(['is_admin', 'is_driver']);
        return insert;
      })) as { user_id: string }[];
      return inserted.map((r) => r.user_id);
    } catch (err) {
      if ((err as { constraint?: string }).constraint === 'team_members_user_organization_fkey')
        throw errors.invalidArgument('a member is not a user of this organization', [
          { field: 'members', description: 'users of the group’s organization only' },
        ]);
      throw err;
    }
  }
}

function toEvent(row: EventRow): scimAuditV1.ProvisioningEvent {
  return {
    id: Number(row.id),
    time: { seconds: Number(row.seconds), nanos: Number(row.micros) * 1_000 },
    actor: row.actor,
    action: row.operation,
    resourceType: GROUP_RESOURCE_TYPE.name,
    resourceId: String(row.team_id),
    requestId: row.request_id ?? '',
  };
}
