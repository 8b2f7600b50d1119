import { drivesV1 } from '@mileage/proto';
import { acrossOrganizations, sqlSpans, statementsOf, type Knex, type ReadStatements } from '@mileage/runtime/database';
import { errors } from '@mileage/runtime/grpc';
import { recordEvent } from '@mileage/runtime/outbox';
import { type TraceContext } from '@mileage/runtime/telemetry';
import { type WireTimestamp } from '@mileage/runtime/formats';
import {
  DRIVE_COLUMNS,
  iso,
  millis,
  toColumns,
  toDrive,
  toReported,
  type CommentRow,
  type ReportRow,
  type DriveRow,
} from './rows';
import { type Stamp, WIRE_TIMESTAMPS, wire } from './stamps';
import { COMMENTS_SQL, commentsByDrive, commentsParameters } from './statements';

const sql = sqlSpans('drives');

/**
 * The sync horizon: no transaction of this service that is still running started before it. Writers stamp
 * `modified_at = now()` (their transaction's start), so every row stamped before the horizon is committed and
 * no later commit can carry an earlier stamp: a list by modified time that stops at the horizon can be used as
 * a watermark without losing a change whose transaction committed late. Read in its own statement, before the
 * list's statement takes its snapshot, so a transaction that ends in between is visible to the list.
 * Truncated to the millisecond like the stored stamps (which round): a running transaction's stamp is never
 * below the truncated horizon.
 */
const HORIZON_SQL = `
  SELECT date_trunc('milliseconds', coalesce(min(xact_start), clock_timestamp())) AS horizon
    FROM pg_stat_activity
   WHERE datname = current_database() AND usename = current_user AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`;

const USER_DRIVE_COLUMNS = DRIVE_COLUMNS.join(', ');
const REPORTED_COLUMNS = [
  ...DRIVE_COLUMNS.map((c) => `d.${c}`),
  'r.drive_id',
  'r.group_id',
  'r.status',
  'r.reported_at',
  'r.modified_at AS report_modified_at',
].join(', ');
const DRIVER_OF_SQL = 'SELECT user_id FROM drives WHERE id = ? AND organization_id = ?';

const EXPORT_BOUND_SQL = 'SELECT max(id) AS newest FROM drives WHERE organization_id = ? AND user_id = ?';
const EXPORT_PAGE_SQL = `SELECT ${USER_DRIVE_COLUMNS} FROM drives
  WHERE organization_id = ? AND user_id = ? AND id > ? AND id <= ? ORDER BY id LIMIT ?`;

export interface ListQuery {
  limit: number;
  sortField: 'modified' | 'ended';
  after?: string;
  before?: string;
  position?: { sortTime: string; id: number };
  /** Tombstones too (sort by modified only; validation refuses it with 'ended'). */
  includeDeleted?: boolean;
}

/** The default of TOMBSTONE_RETENTION_DAYS. */
export const DEFAULT_TOMBSTONE_RETENTION_DAYS = 90;

interface TombstoneRow {
  drive_id: string;
  user_id: string;
  group_id: string;
  modified_at: Stamp;
}

type Sorted = { sort_value: Stamp; sort_id: string };

/** A list statement's parts (see `page`). */
interface ListSpec {
  columns: string;
  from: string;
  where: string;
  column: string;
  idColumn: string;
  bindings: Knex.RawBinding[];
  name: string;
}

/**
 * From when the tombstones are complete: now - retention, or the latest purge's cutoff when that is later (a retention
 * that was just lengthened). A sync whose lower bound is earlier than this may lack deletions: 410, resync.
 */
const COMPLETE_SINCE_SQL = `SELECT ?::timestamptz < greatest(now() - make_interval(days => ?), purged_before) AS stale,
  greatest(now() - make_interval(days => ?), purged_before) AS complete_since FROM tombstone_purges`;

const toTombstone = (row: TombstoneRow): drivesV1.Tombstone => ({
  driveId: Number(row.drive_id),
  userId: row.user_id.trim(),
  groupId: Number(row.group_id),
  deleteTime: wire(row.modified_at),
});

/** Below every drive id: `(t, BEFORE_ANY_ID)` as an upper bound means "sort value before t". */
const BEFORE_ANY_ID = '-9223372036854775808';

/**
 * The one upper bound of a list, newest first: the lowest of `before`, the sync horizon and the keyset position, as
 * one (sort value, id) row comparison. Given PostgreSQL a scalar bound and a row comparison on the same column, it
 * started the index scan at the scalar bound and applied the row comparison to every entry down to the position: a
 * page 10 million reports deep cost 2.4–2.9 s. With one row comparison the scan starts at the position.
 */
export function upperBound(
  before: string | undefined,
  horizon: Date | undefined,
  position: { sortTime: string; id: number } | undefined,
): { time: string; id: string | number } | undefined {
  let bound: { time: string; ms: number; id: string | number } | undefined;
  const lower = (time: string, id: string | number) => {
    const ms = Date.parse(time);
    // Equal instants: a whole-instant bound (BEFORE_ANY_ID) is below any position at that instant.
    if (!bound || ms < bound.ms || (ms === bound.ms && id === BEFORE_ANY_ID)) bound = { time, ms, id };
  };
  if (position) lower(position.sortTime, position.id);
  if (before) lower(before, BEFORE_ANY_ID);
  if (horizon) lower(horizon.toISOString(), BEFORE_ANY_ID);
  return bound && { time: bound.time, id: bound.id };
}

/** Newest first by (sort value, id): the order of every list. */
const newestFirst = (a: Sorted, b: Sorted): number => {
  const x = millis(a.sort_value);
  const y = millis(b.sort_value);
  return x === y ? Number(b.sort_id) - Number(a.sort_id) : x < y ? 1 : -1;
};

/**
 * The reads of the `drives` schema, inside one organization: run on the statements of a read that declared it (the
 * service's lists and lookups: readInOrganization, no knex transaction), or of a write's transaction. Every
 * statement also names the organization, so row-level security is the second wall, not the only one.
 */
export class DriveReads {
  constructor(
    private readonly run: ReadStatements,
    private readonly organizationId: number,
    private readonly retentionDays = DEFAULT_TOMBSTONE_RETENTION_DAYS,
  ) {}

  private async horizon(trace?: TraceContext): Promise<Date> {
    const { rows } = await sql(trace, 'SELECT', HORIZON_SQL, async () =>
      this.run<{ horizon: Date }>(HORIZON_SQL, [], 'drives_horizon_v1'),
    );
    return rows[0]!.horizon;
  }

  /**
   * One page of a list: its live rows and, with `includeDeleted`, its tombstones (`tombstones`: where they are).
   * Bounds, horizon (sort by modified), keyset position, newest first, limit + 1. The statement text depends only on
   * which of these apply, so each variant is a named statement, prepared once per connection (planning it on every
   * page cost PostgreSQL more than running it).
   */
  private async page<T extends Sorted>(
    live: ListSpec,
    tombstones: ListSpec,
    q: ListQuery,
    trace: TraceContext | undefined,
  ): Promise<{
    rows: T[];
    tombstones: drivesV1.Tombstone[];
    hasMore: boolean;
    next?: { sortTime: WireTimestamp; id: number };
  }> {
    if (q.includeDeleted) return this.pageWithTombstones<T>(live, tombstones, q, trace);
    return { ...cut(await this.rows<T>(live, q, trace), q.limit), tombstones: [] };
  }

  /** The limit + 1 first rows of a list (`horizon`: one already read for another part of the same page). */
  private async rows<T extends Sorted>(
    list: ListSpec,
    q: ListQuery,
    trace: TraceContext | undefined,
    horizon?: Date,
  ): Promise<T[]> {
    const where = [list.where];
    const bindings: Knex.RawBinding[] = [...list.bindings];
    const add = (condition: string, ...values: Knex.RawBinding[]) => {
      where.push(condition);
      bindings.push(...values);
    };
    if (q.after) add(`${list.column} > ?`, q.after);
    const upper = upperBound(
      q.before,
      q.sortField === 'modified' ? (horizon ?? (await this.horizon(trace))) : undefined,
      q.position,
    );
    if (upper) add(`(${list.column}, ${list.idColumn}) < (?, ?)`, upper.time, upper.id);
    bindings.push(q.limit + 1);
    const text = `SELECT ${list.columns}, ${list.column} AS sort_value, ${list.idColumn} AS sort_id
      FROM ${list.from} WHERE ${where.join(' AND ')}
      ORDER BY ${list.column} DESC, ${list.idColumn} DESC LIMIT ?`;
    const name = `${list.name}_${q.sortField}${q.after ? '_a' : ''}${upper ? '_u' : ''}`;
    const { rows } = await sql(trace, 'SELECT', text, async () => this.run<T>(text, bindings, name, WIRE_TIMESTAMPS));
    return rows;
  }

  /**
   * A page of live rows and tombstones together: both parts under one horizon, merged newest first, cut to the
   * limit; then, for an incremental sync, the check that no tombstone after its lower bound can have been purged.
   */
  private async pageWithTombstones<T extends Sorted>(
    live: ListSpec,
    tombstones: ListSpec,
    q: ListQuery,
    trace: TraceContext | undefined,
  ) {
    const horizon = await this.horizon(trace);
    const [liveRows, deadRows] = await Promise.all([
      this.rows<T>(live, q, trace, horizon),
      this.rows<TombstoneRow & Sorted>(tombstones, q, trace, horizon),
    ]);
    // After the rows were read: a purge that committed before them has moved purged_before by then.
    if (q.after) await this.requireCompleteSince(q.after, trace);
    const merged = [
      ...liveRows.map((row) => ({ ...row, tombstone: false as const })),
      ...deadRows.map((row) => ({ ...row, tombstone: true as const })),
    ].sort(newestFirst);
    const page = cut(merged, q.limit);
    return {
      rows: page.rows.flatMap((r) => (r.tombstone ? [] : [r as T & { tombstone: false }])),
      tombstones: page.rows.flatMap((r) => (r.tombstone ? [toTombstone(r)] : [])),
      hasMore: page.hasMore,
      next: page.next,
    };
  }

  /** FAILED_PRECONDITION (RESYNC_REQUIRED) when tombstones after `after` may have been purged. */
  private async requireCompleteSince(after: string, trace: TraceContext | undefined): Promise<void> {
    const days = this.retentionDays;
    const { rows } = await sql(trace, 'SELECT', COMPLETE_SINCE_SQL, async () =>
      this.run<{ stale: boolean; complete_since: Date }>(
        COMPLETE_SINCE_SQL,
        [after, days, days],
        'drives_tombstones_complete_since_v1',
      ),
    );
    const { stale, complete_since } = rows[0]!;
    if (stale)
      throw errors.failedPrecondition(
        `Deletions are kept for ${days} days: the list is complete only after ${complete_since.toISOString()}, and ` +
          `date_after (or modified_after) is earlier. Start a full sync: list without date_after and replace your copy.`,
        'RESYNC_REQUIRED',
      );
  }

  async listUserDrives(userId: string, classification: string | null, q: ListQuery, trace?: TraceContext) {
    const live: ListSpec = {
      columns: USER_DRIVE_COLUMNS,
      from: 'drives',
      where: `organization_id = ? AND user_id = ?${classification ? ' AND classification = ?' : ''}`,
      column: q.sortField === 'ended' ? 'ended_at' : 'modified_at',
      idColumn: 'id',
      bindings: [this.organizationId, userId, ...(classification ? [classification] : [])],
      name: `drives_user_list_v2${classification ? '_c' : ''}`,
    };
    // Every deleted drive of the user, whatever its classification was: a client deletes only what it holds, and a
    // drive reclassified before its deletion must still leave the copy of a client that syncs one classification.
    const deleted: ListSpec = {
      columns: 'drive_id, user_id, 0 AS group_id, modified_at',
      from: 'drive_tombstones',
      where: 'organization_id = ? AND user_id = ?',
      column: 'modified_at',
      idColumn: 'drive_id',
      bindings: [this.organizationId, userId],
      name: 'drives_user_tombstones_v2',
    };
    // Rows, not messages: the service renders them straight to the API's JSON, or to messages when asked for those.
    return this.page<DriveRow & Sorted>(live, deleted, q, trace);
  }

  /**
   * A page of a person's own copy: the user's drives after `afterId` up to `upToId` (every classification), by id. The
   * first page (`upToId` 0) reads the user's newest drive id in the same transaction and returns it as the bound.
   */
  async exportUserDrives(
    userId: string,
    afterId: number,
    upToId: number,
    limit: number,
    trace?: TraceContext,
  ): Promise<{ rows: DriveRow[]; upToId: number; hasMore: boolean }> {
    let bound = upToId;
    if (bound === 0) {
      const { rows } = await sql(trace, 'SELECT', EXPORT_BOUND_SQL, async () =>
        this.run<{ newest: string | null }>(EXPORT_BOUND_SQL, [this.organizationId, userId], 'drives_export_bound_v1'),
      );
      bound = Number(rows[0]?.newest ?? 0);
    }
    if (bound === 0) return { rows: [], upToId: 0, hasMore: false };
    const { rows } = await sql(trace, 'SELECT', EXPORT_PAGE_SQL, async () =>
      this.run<DriveRow>(
        EXPORT_PAGE_SQL,
        [this.organizationId, userId, afterId, bound, limit + 1],
        'drives_export_page_v1',
        WIRE_TIMESTAMPS,
      ),
    );
    const hasMore = rows.length > limit;
    return { rows: hasMore ? rows.slice(0, limit) : rows, upToId: bound, hasMore };
  }

  async listReportedDrives(groupIds: number[], q: ListQuery, trace?: TraceContext) {
    // One group (the common case) as an equality, so the (group, sort field, id) index yields the rows in order.
    const one = groupIds.length === 1;
    const live: ListSpec = {
      columns: REPORTED_COLUMNS,
      from: 'drive_reports r JOIN drives d ON d.id = r.drive_id',
      where: `r.organization_id = ? AND ${one ? 'r.group_id = ?' : 'r.group_id = ANY(?::bigint[])'}`,
      column: q.sortField === 'ended' ? 'r.ended_at' : 'r.modified_at',
      idColumn: 'r.drive_id',
      bindings: [this.organizationId, one ? groupIds[0]! : groupIds],
      name: `drives_reported_list_v2${one ? '' : '_any'}`,
    };
    // One group: reporting a drive again removes its tombstone there, so a drive id is once in the list. Several:
    // a drive withdrawn from one and reported to another, or withdrawn from two, is listed once, as it is now.
    const withdrawn: ListSpec = {
      columns: 't.drive_id, t.user_id, t.group_id, t.modified_at',
      from: 'report_tombstones t',
      where: one
        ? 't.organization_id = ? AND t.group_id = ?'
        : `t.organization_id = ? AND t.group_id = ANY(?::bigint[])
           AND NOT EXISTS (SELECT 1 FROM drive_reports r WHERE r.drive_id = t.drive_id AND r.group_id = ANY(?::bigint[]))
           AND NOT EXISTS (SELECT 1 FROM report_tombstones n WHERE n.drive_id = t.drive_id
             AND n.group_id = ANY(?::bigint[]) AND (n.modified_at, n.group_id) > (t.modified_at, t.group_id))`,
      column: 't.modified_at',
      idColumn: 't.drive_id',
      bindings: [this.organizationId, ...(one ? [groupIds[0]!] : [groupIds, groupIds, groupIds])],
      name: `drives_reported_tombstones_v2${one ? '' : '_any'}`,
    };
    const { rows, tombstones, hasMore, next } = await this.page<DriveRow & ReportRow & Sorted>(
      live,
      withdrawn,
      q,
      trace,
    );
    const comments = await this.comments(
      rows.map((r) => Number(r.drive_id)),
      trace,
    );
    return {
      reported: rows.map((row) => ({ row, comments: comments.get(Number(row.drive_id)) ?? [] })),
      tombstones,
      hasMore,
      next,
    };
  }

  /** The review comments of these drives, by drive. */
  async comments(driveIds: number[], trace?: TraceContext): Promise<Map<number, CommentRow[]>> {
    if (driveIds.length === 0) return new Map();
    const { rows } = await sql(trace, 'SELECT', COMMENTS_SQL, async () =>
      this.run<CommentRow>(
        COMMENTS_SQL,
        commentsParameters(this.organizationId, driveIds),
        'drives_comments_v2',
        WIRE_TIMESTAMPS,
      ),
    );
    return commentsByDrive(rows);
  }

  /** The driver of a drive of this organization; NOT_FOUND when it has none such. */
  async driverOf(driveId: number, trace?: TraceContext): Promise<string> {
    const { rows } = await sql(trace, 'SELECT', DRIVER_OF_SQL, async () =>
      this.run<{ user_id: string }>(DRIVER_OF_SQL, [driveId, this.organizationId], 'drives_driver_of_v1'),
    );
    if (!rows[0]) throw errors.notFound(`drive ${driveId} not found`, 'DRIVE_NOT_FOUND');
    return rows[0].user_id.trim();
  }
}

/**
 * The writes of the `drives` schema, inside one organization: constructed over the transaction that declared it
 * (inOrganization), every statement also names it; their events go out through the outbox in the same transaction.
 */
export class DrivesRepository {
  constructor(
    private readonly db: Knex.Transaction,
    private readonly organizationId: number,
  ) {}

  /** The reads a write makes, in its own transaction. */
  private async reads(): Promise<DriveReads> {
    return new DriveReads(await statementsOf(this.db), this.organizationId);
  }

  async create(drive: drivesV1.Drive, trace?: TraceContext): Promise<drivesV1.Drive> {
    const insert = this.db('drives')
      .insert({ ...toColumns(drive), organization_id: this.organizationId })
      .returning(DRIVE_COLUMNS);
    const [row] = (await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert)) as DriveRow[];
    return toDrive(row!);
  }

  async update(drive: drivesV1.Drive, trace?: TraceContext): Promise<drivesV1.Drive> {
    const tx = this.db;
    const update = tx('drives')
      .update({ ...toColumns(drive), modified_at: tx.fn.now() })
      .where({ id: drive.id, user_id: drive.userId, organization_id: this.organizationId })
      .returning(DRIVE_COLUMNS);
    const [row] = (await sql(trace, 'UPDATE', update.toSQL().sql, async () => update)) as DriveRow[];
    if (!row) throw errors.notFound(`drive ${drive.id} of user ${drive.userId} not found`, 'DRIVE_NOT_FOUND');
    await tx('drive_reports')
      .update({ ended_at: row.ended_at })
      .where({ drive_id: drive.id, organization_id: this.organizationId });
    return toDrive(row);
  }

  /** Reports a drive to a group; `drive.reported` in the same transaction. */
  async report(driveId: number, groupId: number, trace?: TraceContext): Promise<drivesV1.ReportedDrive> {
    try {
      const tx = this.db;
      const inserted = await sql(trace, 'INSERT', 'INSERT INTO drive_reports SELECT FROM drives', async () =>
        tx.raw<{ rows: { user_id: string; status: string; modified_at: Date }[] }>(
          `WITH d AS (SELECT id, user_id, ended_at, organization_id FROM drives WHERE id = ? AND organization_id = ?),
           inserted AS (INSERT INTO drive_reports (drive_id, group_id, status, ended_at, organization_id)
             SELECT id, ?, 'submitted', ended_at, organization_id FROM d RETURNING status, modified_at)
           SELECT d.user_id, inserted.status, inserted.modified_at FROM inserted, d`,
          [driveId, this.organizationId, groupId],
        ),
      );
      const row = inserted.rows[0];
      if (!row) throw errors.notFound(`drive ${driveId} not found`, 'DRIVE_NOT_FOUND');
      // Reported again to a group it was withdrawn from: the live report supersedes the tombstone.
      await tx('report_tombstones')
        .where({ drive_id: driveId, group_id: groupId, organization_id: this.organizationId })
        .delete();
      await recordEvent(tx, {
        type: 'drive.reported',
        groupId: String(groupId),
        userId: row.user_id.trim(),
        data: driveEventData(driveId, groupId, row.user_id, row.modified_at, { status: row.status }),
      });
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === '23505') throw errors.alreadyExists(`drive ${driveId} is already reported`, 'ALREADY_REPORTED');
      // Deleted while being reported (the foreign key saw the deletion's commit).
      if (code === '23503') throw errors.notFound(`drive ${driveId} not found`, 'DRIVE_NOT_FOUND');
      throw err;
    }
    return (await this.getReported(driveId, trace))!;
  }

  /** Sets a report's status and may add a review comment; `drive.report_updated` in the same transaction. */
  async review(
    driveId: number,
    status: string,
    comment: string,
    reviewerEmail: string,
    trace?: TraceContext,
  ): Promise<drivesV1.ReportedDrive> {
    const tx = this.db;
    const updated = await sql(trace, 'UPDATE', 'UPDATE drive_reports SET status', async () =>
      tx('drive_reports')
        .update({ status, modified_at: tx.fn.now() })
        .where({ drive_id: driveId, organization_id: this.organizationId })
        .returning(['group_id', 'modified_at']),
    );
    const report = (updated as { group_id: string; modified_at: Date }[])[0];
    if (!report) throw errors.notFound(`drive ${driveId} is not reported`, 'NOT_REPORTED');
    let commentId: string | undefined;
    if (comment) {
      const [added] = (await tx('review_comments')
        .insert({ drive_id: driveId, organization_id: this.organizationId, text: comment, user_email: reviewerEmail })
        .returning('id')) as { id: string }[];
      commentId = String(added!.id);
    }
    const user_id = await (await this.reads()).driverOf(driveId, trace);
    await recordEvent(tx, {
      type: 'drive.report_updated',
      groupId: String(report.group_id),
      userId: user_id.trim(),
      data: driveEventData(driveId, Number(report.group_id), user_id, report.modified_at, {
        status,
        ...(commentId ? { review_comment_id: commentId } : {}),
      }),
    });
    return (await this.getReported(driveId, trace))!;
  }

  /**
   * Deletes a drive of `userId`: its review comments, its report and the drive leave the live tables; a tombstone of
   * the drive and one of its report stay until the purge; `drive.deleted` for the group it was reported to. All in one
   * transaction.
   */
  async deleteDrive(driveId: number, userId: string, trace?: TraceContext): Promise<drivesV1.DeleteDriveResponse> {
    const tx = this.db;
    const drive = (await sql(trace, 'SELECT', 'SELECT FROM drives FOR UPDATE', async () =>
      tx('drives').select(DRIVE_COLUMNS).where(this.ofUser(driveId, userId)).forUpdate().first(),
    )) as DriveRow | undefined;
    if (!drive) throw errors.notFound(`drive ${driveId} of user ${userId} not found`, 'DRIVE_NOT_FOUND');
    const groupId = await this.removeReport(tx, driveId, trace);
    await sql(trace, 'DELETE', 'DELETE FROM drives', async () =>
      tx('drives').where({ id: driveId, organization_id: this.organizationId }).delete(),
    );
    const [tombstone] = (await sql(trace, 'INSERT', 'INSERT INTO drive_tombstones', async () =>
      tx('drive_tombstones')
        .insert({
          drive_id: driveId,
          user_id: userId,
          organization_id: this.organizationId,
          group_ids: groupId ? [groupId] : [],
          drive: JSON.stringify(drive),
        })
        .returning(['drive_id', 'user_id', 'modified_at']),
    )) as TombstoneRow[];
    tombstone!.group_id = '0';
    if (groupId) {
      await this.leaveReportTombstone(tx, driveId, groupId, userId, trace);
      await recordEvent(tx, {
        type: 'drive.deleted',
        groupId: String(groupId),
        userId,
        data: driveEventData(driveId, groupId, userId, tombstone!.modified_at),
      });
    }
    return { tombstone: toTombstone(tombstone!), withdrawnGroupId: groupId ?? 0 };
  }

  /** Withdraws the report of a drive of `userId` (with its review comments); `drive.report_withdrawn`. */
  async withdrawReport(driveId: number, userId: string, trace?: TraceContext): Promise<drivesV1.Tombstone> {
    const tx = this.db;
    const owned = await tx('drives').select('id').where(this.ofUser(driveId, userId)).forUpdate().first();
    const groupId = owned ? await this.removeReport(tx, driveId, trace) : undefined;
    if (!groupId) throw errors.notFound(`drive ${driveId} of user ${userId} is not reported`, 'NOT_REPORTED');
    const tombstone = await this.leaveReportTombstone(tx, driveId, groupId, userId, trace);
    await recordEvent(tx, {
      type: 'drive.report_withdrawn',
      groupId: String(groupId),
      userId,
      data: driveEventData(driveId, groupId, userId, tombstone.modified_at),
    });
    return toTombstone(tombstone);
  }

  /** The key of a drive of `userId` in this organization. */
  private ofUser(driveId: number, userId: string) {
    return { id: driveId, user_id: userId, organization_id: this.organizationId };
  }

  /** Deletes a drive's report and its comments; the group it was reported to, if it was. */
  private async removeReport(tx: Knex.Transaction, driveId: number, trace?: TraceContext): Promise<number | undefined> {
    await sql(trace, 'DELETE', 'DELETE FROM review_comments', async () =>
      tx('review_comments').where({ drive_id: driveId, organization_id: this.organizationId }).delete(),
    );
    const removed = (await sql(trace, 'DELETE', 'DELETE FROM drive_reports', async () =>
      tx('drive_reports')
        .where({ drive_id: driveId, organization_id: this.organizationId })
        .delete()
        .returning('group_id'),
    )) as { group_id: string }[];
    return removed[0] ? Number(removed[0].group_id) : undefined;
  }

  private async leaveReportTombstone(
    tx: Knex.Transaction,
    driveId: number,
    groupId: number,
    userId: string,
    trace?: TraceContext,
  ): Promise<TombstoneRow> {
    // Withdrawn from this group before (and reported again): the newest withdrawal is the tombstone.
    const [row] = (await sql(trace, 'INSERT', 'INSERT INTO report_tombstones', async () =>
      tx('report_tombstones')
        .insert({ drive_id: driveId, group_id: groupId, user_id: userId, organization_id: this.organizationId })
        .onConflict(['drive_id', 'group_id'])
        .merge({ modified_at: tx.fn.now(), user_id: userId })
        .returning(['drive_id', 'user_id', 'group_id', 'modified_at']),
    )) as TombstoneRow[];
    return row!;
  }

  private async getReported(driveId: number, trace?: TraceContext): Promise<drivesV1.ReportedDrive | undefined> {
    const row = (await this.db({ r: 'drive_reports' })
      .join({ d: 'drives' }, 'd.id', 'r.drive_id')
      .select(DRIVE_COLUMNS.map((c) => `d.${c}`))
      .select({
        drive_id: 'r.drive_id',
        group_id: 'r.group_id',
        status: 'r.status',
        reported_at: 'r.reported_at',
        report_modified_at: 'r.modified_at',
      })
      .where({ 'r.drive_id': driveId, 'r.organization_id': this.organizationId })
      .first()) as (DriveRow & ReportRow) | undefined;
    if (!row) return undefined;
    const reads = await this.reads();
    const comments = await reads.comments([driveId], trace);
    return toReported(row, comments.get(driveId) ?? []);
  }
}

/**
 * Housekeeping: drops the tombstones older than the retention window, in batches (short transactions), after
 * recording the cutoff (from then on an older sync bound is refused, before a tombstone it needs is gone). Work
 * across organizations: the one use of acrossOrganizations here.
 */
export async function purgeTombstones(
  knex: Knex,
  retentionDays: number,
  batchSize = 5_000,
): Promise<{ drives: number; reports: number; purgedBefore: Date }> {
  const { rows } = await knex.raw<{ rows: { cutoff: Date }[] }>(
    `UPDATE tombstone_purges SET purged_before = greatest(purged_before, now() - make_interval(days => ?))
     RETURNING now() - make_interval(days => ?) AS cutoff`,
    [retentionDays, retentionDays],
  );
  const cutoff = rows[0]!.cutoff;
  const purge = async (table: string): Promise<number> => {
    let total = 0;
    for (;;) {
      const deleted = await acrossOrganizations(knex, (trx) =>
        trx.raw<{ rowCount: number }>(
          `DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE modified_at < ? LIMIT ?)`,
          [cutoff, batchSize],
        ),
      );
      total += deleted.rowCount;
      if (deleted.rowCount < batchSize) return total;
    }
  };
  return { drives: await purge('drive_tombstones'), reports: await purge('report_tombstones'), purgedBefore: cutoff };
}

function cut<T extends Sorted>(
  rows: T[],
  limit: number,
): { rows: T[]; hasMore: boolean; next?: { sortTime: WireTimestamp; id: number } } {
  const hasMore = rows.length > limit;
  if (hasMore) rows.length = limit;
  const last = rows[rows.length - 1];
  return {
    rows,
    hasMore,
    ...(hasMore && last ? { next: { sortTime: wire(last.sort_value), id: Number(last.sort_id) } } : {}),
  };
}

/** The `data` of a drive event (docs/webhooks.md): small, the ids and the time of the change. */
function driveEventData(
  driveId: number,
  groupId: number,
  userId: string,
  modified: Stamp,
  more: Record<string, string> = {},
): Record<string, unknown> {
  return { drive_id: driveId, group_id: String(groupId), user_id: userId.trim(), ...more, modified: iso(modified) };
}
