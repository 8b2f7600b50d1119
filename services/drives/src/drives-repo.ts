import { drivesV1 } from '@mileage/proto';
import { errors, sqlSpans, type Knex, type TraceContext } from '@mileage/runtime';
import { DRIVE_COLUMNS, ISO_TIMESTAMPS, iso, toColumns, toDrive, type DriveRow, type Stamp } from './rows';

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
// The review comments of a page's drives: one statement for any number of drives (an array parameter).
const COMMENTS_SQL = `SELECT id, drive_id, text, user_email, created_at FROM review_comments
  WHERE drive_id = ANY(?::bigint[]) ORDER BY id`;

export interface ListQuery {
  limit: number;
  sortField: 'modified' | 'ended';
  after?: string;
  before?: string;
  position?: { sortTime: string; id: number };
}

interface ReportRow {
  drive_id: string;
  group_id: string;
  status: string;
  reported_at: Stamp;
  report_modified_at: Stamp;
}

interface CommentRow {
  id: string;
  drive_id: string;
  text: string;
  user_email: string;
  created_at: Stamp;
}

export class DrivesRepository {
  constructor(private readonly knex: Knex) {}

  private async horizon(trace?: TraceContext): Promise<Date> {
    const { rows } = await sql(
      trace,
      'SELECT',
      HORIZON_SQL,
      async () => this.knex.raw<{ rows: { horizon: Date }[] }>(HORIZON_SQL).options({ name: 'drives_horizon_v1' }),
      { retryRead: true },
    );
    return rows[0]!.horizon;
  }

  /**
   * One page of a list: bounds, horizon (sort by modified), keyset position, newest first, limit + 1. The statement
   * text depends only on which of these apply, so each variant is a named statement, prepared once per connection
   * (planning it on every page cost PostgreSQL more than running it).
   */
  private async page<T extends { sort_value: Stamp; sort_id: string }>(
    list: {
      columns: string;
      from: string;
      where: string;
      column: string;
      idColumn: string;
      bindings: Knex.RawBinding[];
      name: string;
    },
    q: ListQuery,
    trace: TraceContext | undefined,
  ): Promise<{ rows: T[]; hasMore: boolean; next?: { sortTime: string; id: number } }> {
    const where = [list.where];
    const bindings: Knex.RawBinding[] = [...list.bindings];
    const add = (condition: string, ...values: Knex.RawBinding[]) => {
      where.push(condition);
      bindings.push(...values);
    };
    if (q.after) add(`${list.column} > ?`, q.after);
    if (q.before) add(`${list.column} < ?`, q.before);
    if (q.sortField === 'modified') add(`${list.column} < ?`, await this.horizon(trace));
    if (q.position) add(`(${list.column}, ${list.idColumn}) < (?, ?)`, q.position.sortTime, q.position.id);
    bindings.push(q.limit + 1);
    const text = `SELECT ${list.columns}, ${list.column} AS sort_value, ${list.idColumn} AS sort_id
      FROM ${list.from} WHERE ${where.join(' AND ')}
      ORDER BY ${list.column} DESC, ${list.idColumn} DESC LIMIT ?`;
    const name = `${list.name}_${q.sortField}${q.after ? '_a' : ''}${q.before ? '_b' : ''}${q.position ? '_p' : ''}`;
    const { rows } = await sql(
      trace,
      'SELECT',
      text,
      async () => this.knex.raw<{ rows: T[] }>(text, bindings).options({ name, types: ISO_TIMESTAMPS }),
      { retryRead: true },
    );
    const hasMore = rows.length > q.limit;
    if (hasMore) rows.length = q.limit;
    const last = rows[rows.length - 1];
    return {
      rows,
      hasMore,
      ...(hasMore && last ? { next: { sortTime: iso(last.sort_value), id: Number(last.sort_id) } } : {}),
    };
  }

  async listUserDrives(userId: string, classification: string | null, q: ListQuery, trace?: TraceContext) {
    const page = await this.page<DriveRow & { sort_value: Stamp; sort_id: string }>(
      {
        columns: USER_DRIVE_COLUMNS,
        from: 'drives',
        where: classification ? 'user_id = ? AND classification = ?' : 'user_id = ?',
        column: q.sortField === 'ended' ? 'ended_at' : 'modified_at',
        idColumn: 'id',
        bindings: classification ? [userId, classification] : [userId],
        name: `drives_user_list_v1${classification ? '_c' : ''}`,
      },
      q,
      trace,
    );
    return { drives: page.rows.map(toDrive), hasMore: page.hasMore, next: page.next };
  }

  async listReportedDrives(groupIds: number[], q: ListQuery, trace?: TraceContext) {
    // One group (the common case) as an equality, so the (group, sort field, id) index yields the rows in order.
    const one = groupIds.length === 1;
    const page = await this.page<DriveRow & ReportRow & { sort_value: Stamp; sort_id: string }>(
      {
        columns: REPORTED_COLUMNS,
        from: 'drive_reports r JOIN drives d ON d.id = r.drive_id',
        where: one ? 'r.group_id = ?' : 'r.group_id = ANY(?::bigint[])',
        column: q.sortField === 'ended' ? 'r.ended_at' : 'r.modified_at',
        idColumn: 'r.drive_id',
        bindings: [one ? groupIds[0]! : groupIds],
        name: `drives_reported_list_v1${one ? '' : '_any'}`,
      },
      q,
      trace,
    );
    const comments = await this.comments(
      page.rows.map((r) => Number(r.drive_id)),
      trace,
    );
    return {
      reportedDrives: page.rows.map((r) => this.toReported(r, comments.get(Number(r.drive_id)) ?? [])),
      hasMore: page.hasMore,
      next: page.next,
    };
  }

  private toReported(row: DriveRow & ReportRow, comments: CommentRow[]): drivesV1.ReportedDrive {
    return {
      drive: toDrive(row),
      groupId: Number(row.group_id),
      status: row.status,
      reportTime: iso(row.reported_at),
      updateTime: iso(row.report_modified_at),
      reviewComments: comments.map((c) => ({
        id: Number(c.id),
        text: c.text,
        createTime: iso(c.created_at),
        userEmail: c.user_email,
      })),
    };
  }

  private async comments(driveIds: number[], trace?: TraceContext): Promise<Map<number, CommentRow[]>> {
    const byDrive = new Map<number, CommentRow[]>();
    if (driveIds.length === 0) return byDrive;
    const { rows } = await sql(
      trace,
      'SELECT',
      COMMENTS_SQL,
      async () =>
        this.knex
          .raw<{ rows: CommentRow[] }>(COMMENTS_SQL, [driveIds])
          .options({ name: 'drives_comments_v1', types: ISO_TIMESTAMPS }),
      { retryRead: true },
    );
    for (const row of rows) {
      const list = byDrive.get(Number(row.drive_id)) ?? [];
      list.push(row);
      byDrive.set(Number(row.drive_id), list);
    }
    return byDrive;
  }

  async create(drive: drivesV1.Drive, trace?: TraceContext): Promise<drivesV1.Drive> {
    const insert = this.knex('drives').insert(toColumns(drive)).returning(DRIVE_COLUMNS);
    const [row] = (await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert)) as DriveRow[];
    return toDrive(row!);
  }

  async update(drive: drivesV1.Drive, trace?: TraceContext): Promise<drivesV1.Drive> {
    return this.knex.transaction(async (tx) => {
      const update = tx('drives')
        .update({ ...toColumns(drive), modified_at: tx.fn.now() })
        .where({ id: drive.id, user_id: drive.userId })
        .returning(DRIVE_COLUMNS);
      const [row] = (await sql(trace, 'UPDATE', update.toSQL().sql, async () => update)) as DriveRow[];
      if (!row) throw errors.notFound(`drive ${drive.id} of user ${drive.userId} not found`, 'DRIVE_NOT_FOUND');
      await tx('drive_reports').update({ ended_at: row.ended_at }).where({ drive_id: drive.id });
      return toDrive(row);
    });
  }

  async report(driveId: number, groupId: number, trace?: TraceContext): Promise<drivesV1.ReportedDrive> {
    try {
      await sql(trace, 'INSERT', 'INSERT INTO drive_reports SELECT FROM drives', async () => {
        const inserted = await this.knex.raw<{ rowCount: number }>(
          `INSERT INTO drive_reports (drive_id, group_id, status, ended_at)
           SELECT id, ?, 'submitted', ended_at FROM drives WHERE id = ?`,
          [groupId, driveId],
        );
        if (inserted.rowCount === 0) throw errors.notFound(`drive ${driveId} not found`, 'DRIVE_NOT_FOUND');
      });
    } catch (err) {
      if ((err as { code?: string }).code === '23505')
        throw errors.alreadyExists(`drive ${driveId} is already reported`, 'ALREADY_REPORTED');
      throw err;
    }
    return (await this.getReported(driveId, trace))!;
  }

  async review(
    driveId: number,
    status: string,
    comment: string,
    reviewerEmail: string,
    trace?: TraceContext,
  ): Promise<drivesV1.ReportedDrive> {
    await this.knex.transaction(async (tx) => {
      const updated = await sql(trace, 'UPDATE', 'UPDATE drive_reports SET status', async () =>
        tx('drive_reports').update({ status, modified_at: tx.fn.now() }).where({ drive_id: driveId }),
      );
      if (updated === 0) throw errors.notFound(`drive ${driveId} is not reported`, 'NOT_REPORTED');
      if (comment) await tx('review_comments').insert({ drive_id: driveId, text: comment, user_email: reviewerEmail });
    });
    return (await this.getReported(driveId, trace))!;
  }

  private async getReported(driveId: number, trace?: TraceContext): Promise<drivesV1.ReportedDrive | undefined> {
    const row = (await this.knex({ r: 'drive_reports' })
      .join({ d: 'drives' }, 'd.id', 'r.drive_id')
      .select(DRIVE_COLUMNS.map((c) => `d.${c}`))
      .select({
        drive_id: 'r.drive_id',
        group_id: 'r.group_id',
        status: 'r.status',
        reported_at: 'r.reported_at',
        report_modified_at: 'r.modified_at',
      })
      .where('r.drive_id', driveId)
      .first()) as (DriveRow & ReportRow) | undefined;
    if (!row) return undefined;
    const comments = await this.comments([driveId], trace);
    return this.toReported(row, comments.get(driveId) ?? []);
  }
}
