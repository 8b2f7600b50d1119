import type { groupsV1, scimAuditV1 } from '@mileage/proto';
import { auditRow, filterSchema, GROUP_RESOURCE_TYPE, sqlFilterTable, type SqlCondition } from '@mileage/scim-domain';
import { dateToTimestamp, errors, sqlSpans, type Knex, type TraceContext } from '@mileage/runtime';

interface TeamRow {
  id: string;
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
  SELECT t.id, t.display_name, t.external_id, t.created_at, t.modified_at, t.version,
         coalesce(json_agg(json_build_object('user_id', m.user_id, 'is_admin', m.is_admin, 'is_driver', m.is_driver)
                  ORDER BY m.user_id) FILTER (WHERE m.user_id IS NOT NULL), '[]') AS members
    FROM teams t LEFT JOIN team_members m ON m.team_id = t.id
   WHERE t.id = ANY(?::bigint[])
   GROUP BY t.id
   ORDER BY t.id`;
const ADMINISTERED_SQL = `SELECT team_id FROM team_members WHERE user_id = ? AND is_admin ORDER BY team_id`;
const CHECK_ADMIN_SQL = `
  SELECT EXISTS (SELECT 1 FROM teams WHERE id = ?) AS exists,
         EXISTS (SELECT 1 FROM team_members WHERE team_id = ? AND user_id = ? AND is_admin) AS is_admin`;

function toGroup(row: TeamRow): groupsV1.Group {
  return {
    id: Number(row.id),
    displayName: row.display_name,
    ...(row.external_id !== null ? { externalId: row.external_id } : {}),
    members: row.members.map((m) => ({ userId: m.user_id, isAdmin: m.is_admin, isDriver: m.is_driver })),
    createTime: dateToTimestamp(new Date(row.created_at)),
    updateTime: dateToTimestamp(new Date(row.modified_at)),
    version: Number(row.version),
  };
}

const sql = sqlSpans('groups');

/** The provisioning audit entry of a write, in the write's own transaction: both happen or neither does. */
async function recordAudit(
  tx: Knex.Transaction,
  audit: scimAuditV1.ProvisioningAudit,
  group: groupsV1.Group,
  trace: TraceContext | undefined,
): Promise<void> {
  const insert = tx('provisioning_audit').insert({ team_id: group.id, ...auditRow(audit, group.version) });
  await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert);
}

/** Data access for the `groups` schema. Every write is one transaction that bumps the group's version. */
export class GroupsRepository {
  constructor(private readonly knex: Knex) {}

  async getMany(
    ids: number[],
    trace?: TraceContext,
    db: Knex | Knex.Transaction = this.knex,
  ): Promise<groupsV1.Group[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql(
      trace,
      'SELECT',
      GET_MANY_SQL,
      async () => db.raw<{ rows: TeamRow[] }>(GET_MANY_SQL, [ids]).options({ name: 'groups_get_many_v1' }),
      { retryRead: !db.isTransaction },
    );
    return rows.map(toGroup);
  }

  async get(id: number, trace?: TraceContext, db?: Knex | Knex.Transaction): Promise<groupsV1.Group | undefined> {
    return (await this.getMany([id], trace, db))[0];
  }

  async administeredBy(userId: string, trace?: TraceContext): Promise<groupsV1.Group[]> {
    const { rows } = await sql(
      trace,
      'SELECT',
      ADMINISTERED_SQL,
      async () =>
        this.knex
          .raw<{ rows: { team_id: string }[] }>(ADMINISTERED_SQL, [userId])
          .options({ name: 'groups_administered_v1' }),
      { retryRead: true },
    );
    return this.getMany(
      rows.map((r) => Number(r.team_id)),
      trace,
    );
  }

  async checkAdmin(
    groupId: number,
    userId: string,
    trace?: TraceContext,
  ): Promise<{ exists: boolean; isAdmin: boolean }> {
    const { rows } = await sql(
      trace,
      'SELECT',
      CHECK_ADMIN_SQL,
      async () =>
        this.knex
          .raw<{ rows: { exists: boolean; is_admin: boolean }[] }>(CHECK_ADMIN_SQL, [groupId, groupId, userId])
          .options({ name: 'groups_check_admin_v1' }),
      { retryRead: true },
    );
    return { exists: rows[0]!.exists, isAdmin: rows[0]!.is_admin };
  }

  async create(displayName: string, members: groupsV1.Member[], trace?: TraceContext): Promise<groupsV1.Group> {
    return this.knex.transaction(async (tx) => {
      const [row] = (await sql(trace, 'INSERT', 'INSERT INTO teams', async () =>
        tx('teams').insert({ display_name: displayName }).returning('id'),
      )) as { id: string }[];
      const id = Number(row!.id);
      await this.insertMembers(tx, id, members, trace);
      return (await this.get(id, trace, tx))!;
    });
  }

  /** Runs `change` on a locked group, then bumps its version; NOT_FOUND / ABORTED as appropriate. */
  private async change(
    groupId: number,
    expectedVersion: number,
    trace: TraceContext | undefined,
    audit: scimAuditV1.ProvisioningAudit | undefined,
    change: (tx: Knex.Transaction) => Promise<void>,
  ): Promise<groupsV1.Group> {
    return this.knex.transaction(async (tx) => {
      const locked = (await sql(trace, 'SELECT', 'SELECT version FROM teams FOR UPDATE', async () =>
        tx('teams').select('version').where({ id: groupId }).forUpdate().first(),
      )) as { version: string } | undefined;
      if (!locked) throw errors.notFound(`group ${groupId} not found`, 'GROUP_NOT_FOUND');
      if (expectedVersion > 0 && Number(locked.version) !== expectedVersion) {
        throw errors.aborted('the group was changed by someone else (version mismatch)', 'VERSION_MISMATCH');
      }
      await change(tx);
      await sql(trace, 'UPDATE', 'UPDATE teams SET version', async () =>
        tx('teams')
          .where({ id: groupId })
          .update({ modified_at: tx.fn.now(), version: tx.raw('version + 1') }),
      );
      const changed = (await this.get(groupId, trace, tx))!;
      if (audit) await recordAudit(tx, audit, changed, trace);
      return changed;
    });
  }

  /** A page of the groups matching `condition`, by id, and how many match in all. */
  async list(
    condition: SqlCondition,
    offset: number,
    limit: number,
    excludeMembers: boolean,
    trace?: TraceContext,
  ): Promise<{ groups: groupsV1.Group[]; total: number }> {
    const countText = `SELECT count(*) AS total FROM teams WHERE ${condition.sql}`;
    const counted = await sql(
      trace,
      'SELECT',
      countText,
      async () => this.knex.raw<{ rows: { total: string }[] }>(countText, condition.bindings),
      { retryRead: true },
    );
    const total = Number(counted.rows[0]!.total);
    if (limit === 0 || offset >= total) return { groups: [], total };
    // As for users (UsersRepository.list): few matches through the filter's index, then sorted; many by the ordered walk.
    const columns = `id, display_name, external_id, created_at, modified_at, version, '[]'::json AS members`;
    const pageText =
      total <= 10_000
        ? `WITH matches AS MATERIALIZED (SELECT ${columns} FROM teams WHERE ${condition.sql}) SELECT * FROM matches ORDER BY id LIMIT ? OFFSET ?`
        : `SELECT ${columns} FROM teams WHERE ${condition.sql} ORDER BY id LIMIT ? OFFSET ?`;
    const { rows } = await sql(
      trace,
      'SELECT',
      pageText,
      async () => this.knex.raw<{ rows: TeamRow[] }>(pageText, [...condition.bindings, limit, offset]),
      { retryRead: true },
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
    return this.change(request.id, request.expectedVersion, trace, request.audit, async (tx) => {
      const fields = {
        ...(request.displayName ? { display_name: request.displayName } : {}),
        ...(request.replaceExternalId ? { external_id: request.externalId ?? null } : {}),
      };
      if (Object.keys(fields).length) await tx('teams').where({ id: request.id }).update(fields);
      if (request.replaceMembers) {
        const keep = request.members.map((m) => m.userId);
        await sql(trace, 'DELETE', 'DELETE FROM team_members', async () =>
          tx('team_members')
            .where({ team_id: request.id })
            .whereNotIn('user_id', keep.length ? keep : [''])
            .delete(),
        );
        // Members who stay keep their roles: only new ones are inserted.
        await this.insertMembers(tx, request.id, request.members, trace, 'ignore');
      }
    });
  }

  setMemberRoles(groupId: number, member: groupsV1.Member, trace?: TraceContext): Promise<groupsV1.Group> {
    return this.change(groupId, 0, trace, undefined, (tx) => this.insertMembers(tx, groupId, [member], trace, 'merge'));
  }

  removeMembers(groupId: number, userIds: string[], trace?: TraceContext): Promise<groupsV1.Group> {
    return this.change(groupId, 0, trace, undefined, async (tx) => {
      if (userIds.length === 0) return;
      await sql(trace, 'DELETE', 'DELETE FROM team_members', async () =>
        tx('team_members').where({ team_id: groupId }).whereIn('user_id', userIds).delete(),
      );
    });
  }

  private async insertMembers(
    tx: Knex.Transaction,
    groupId: number,
    members: groupsV1.Member[],
    trace: TraceContext | undefined,
    onConflict: 'ignore' | 'merge' | 'fail' = 'fail',
  ) {
    if (members.length === 0) return;
    const rows = members.map((m) => ({
      team_id: groupId,
      user_id: m.userId,
      is_admin: m.isAdmin,
      is_driver: m.isDriver,
    }));
    await sql(trace, 'INSERT', 'INSERT INTO team_members', async () => {
      const insert = tx('team_members').insert(rows);
      if (onConflict === 'ignore') await insert.onConflict(['team_id', 'user_id']).ignore();
      else if (onConflict === 'merge') await insert.onConflict(['team_id', 'user_id']).merge(['is_admin', 'is_driver']);
      else await insert;
    });
  }
}
