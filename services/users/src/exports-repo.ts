import { usersV1 } from '@mileage/proto';
import {
  acrossOrganizations,
  inOrganization,
  ONE_STATEMENT,
  readAcrossOrganizations,
  type Knex,
} from '@mileage/runtime/database';
import { dateToTimestamp } from '@mileage/runtime/formats';
import { errors, ORGANIZATION_OFFBOARDING } from '@mileage/runtime/grpc';
import { type TraceContext } from '@mileage/runtime/telemetry';
import { randomUUID } from 'node:crypto';
import { sql } from './database';

/** How long a completed export's archive can be downloaded (CONTRACT §8). */
export const EXPORT_RETENTION_DAYS = 7;
/** The reason of the 409 while an export of the organization is queued or running. */
export const EXPORT_RUNNING = 'EXPORT_RUNNING';

export type ExportStatus = 'queued' | 'running' | 'completed' | 'failed' | 'expired';

export interface ExportRow {
  id: string;
  organization_id: string;
  status: ExportStatus;
  requested_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  expires_at: Date | null;
  phase: string;
  rows_written: string;
  size_bytes: string | null;
  sha256: string | null;
  failure_reason: string | null;
}

const STATUS: Record<ExportStatus, usersV1.ExportStatus> = {
  queued: usersV1.ExportStatus.EXPORT_STATUS_QUEUED,
  running: usersV1.ExportStatus.EXPORT_STATUS_RUNNING,
  completed: usersV1.ExportStatus.EXPORT_STATUS_COMPLETED,
  failed: usersV1.ExportStatus.EXPORT_STATUS_FAILED,
  expired: usersV1.ExportStatus.EXPORT_STATUS_EXPIRED,
};

/** Where an export's archive is kept in the archive store. */
export const archiveKey = (exportId: string) => `exports/${exportId}/archive.tar.gz`;

/** An export's record as the API shows it; an expired one no longer names its archive's size or hash. */
export function toExport(row: ExportRow, now = Date.now()): usersV1.Export {
  // Past its expiry an archive is gone even before the housekeeping has marked it so.
  const expired = row.status === 'expired' || (row.status === 'completed' && row.expires_at!.getTime() <= now);
  return {
    id: row.id,
    status: expired ? usersV1.ExportStatus.EXPORT_STATUS_EXPIRED : STATUS[row.status],
    requestTime: dateToTimestamp(row.requested_at),
    ...(row.completed_at ? { completeTime: dateToTimestamp(row.completed_at) } : {}),
    ...(row.expires_at ? { expireTime: dateToTimestamp(row.expires_at) } : {}),
    phase: row.phase,
    rows: Number(row.rows_written),
    sizeBytes: Number(row.size_bytes ?? 0),
    sha256: row.sha256 ?? '',
    failureReason: row.failure_reason ?? '',
  };
}

export interface ExportAudit {
  actor: string;
  requestId: string;
}

/** An organization's exports, inside its transaction (inOrganization). */
export class ExportsRepository {
  constructor(
    private readonly trx: Knex.Transaction,
    private readonly organizationId: number,
  ) {}

  /**
   * Queues an export; ALREADY_EXISTS (EXPORT_RUNNING) while one is queued or running, FAILED_PRECONDITION
   * (ORGANIZATION_OFFBOARDING, a 409) while the organization is being offboarded: its erasure would delete the archive.
   */
  async request(audit: ExportAudit, trace?: TraceContext): Promise<ExportRow> {
    const offboarding = `SELECT 1 FROM organization_offboardings WHERE organization_id = ?`;
    const { rows: offboarded } = await sql(trace, 'SELECT', offboarding, async () =>
      this.trx.raw<{ rows: unknown[] }>(offboarding, [this.organizationId]),
    );
    if (offboarded.length > 0)
      throw errors.failedPrecondition(
        'the organization is being offboarded: it can no longer request an export',
        ORGANIZATION_OFFBOARDING,
      );
    const text = `INSERT INTO organization_exports (id, organization_id) VALUES (?, ?) RETURNING *`;
    let row: ExportRow | undefined;
    try {
      // A savepoint: the unique index's refusal must not end the caller's transaction.
      const { rows } = await sql(trace, 'INSERT', text, async () =>
        this.trx.transaction((sp) => sp.raw<{ rows: ExportRow[] }>(text, [randomUUID(), this.organizationId])),
      );
      row = rows[0]!;
    } catch (err) {
      if ((err as { code?: string }).code === '23505')
        throw errors.alreadyExists('an export of the organization is already queued or running', EXPORT_RUNNING);
      throw err;
    }
    await recordExportEvent(this.trx, this.organizationId, row.id, 'export', audit, trace);
    return row;
  }

  /** Newest first. */
  async list(trace?: TraceContext): Promise<ExportRow[]> {
    const text = `SELECT * FROM organization_exports WHERE organization_id = ? ORDER BY requested_at DESC, id`;
    const { rows } = await sql(trace, 'SELECT', text, async () =>
      this.trx.raw<{ rows: ExportRow[] }>(text, [this.organizationId]),
    );
    return rows;
  }

  async get(id: string, trace?: TraceContext): Promise<ExportRow | undefined> {
    const text = `SELECT * FROM organization_exports WHERE organization_id = ? AND id = ?`;
    const { rows } = await sql(trace, 'SELECT', text, async () =>
      this.trx.raw<{ rows: ExportRow[] }>(text, [this.organizationId, id]),
    );
    return rows[0];
  }

  async recordDownload(id: string, audit: ExportAudit, trace?: TraceContext): Promise<void> {
    await recordExportEvent(this.trx, this.organizationId, id, 'download', audit, trace);
  }
}

/** An entry of the provisioning trail about an export: requested, downloaded or expired. */
async function recordExportEvent(
  trx: Knex.Transaction,
  organizationId: number,
  exportId: string,
  operation: 'export' | 'download' | 'expire',
  audit: ExportAudit,
  trace?: TraceContext,
): Promise<void> {
  const insert = trx('provisioning_audit').insert({
    organization_id: organizationId,
    export_id: exportId,
    actor: audit.actor,
    operation,
    request_id: audit.requestId || null,
  });
  await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert);
}

/**
 * The export jobs, across organizations (the job runner is system work: acrossOrganizations). A claim holds for
 * `claimMs`; a runner renews it as it goes, and a claim that lapsed (its runner died) is taken over.
 */
export class ExportJobs {
  constructor(private readonly knex: Knex) {}

  /** The oldest export waiting (or whose runner's claim lapsed), now running under this claim; undefined if none. */
  async claim(claimMs: number): Promise<ExportRow | undefined> {
    return acrossOrganizations(this.knex, async (trx) => {
      const { rows } = await trx.raw<{ rows: ExportRow[] }>(
        `UPDATE organization_exports
            SET status = 'running', started_at = now(), phase = 'starting', rows_written = 0,
                claimed_until = now() + make_interval(secs => ?)
          WHERE id = (SELECT id FROM organization_exports
                       WHERE status = 'queued' OR (status = 'running' AND claimed_until < now())
                       ORDER BY requested_at LIMIT 1 FOR UPDATE SKIP LOCKED)
          RETURNING *`,
        [claimMs / 1000],
      );
      return rows[0];
    });
  }

  /** The exports queued and running, by status, with how long the oldest of each has waited since its request. */
  async inProgress(): Promise<Map<string, { count: number; waitedSeconds: number }>> {
    const { rows } = await readAcrossOrganizations(
      this.knex,
      (run) =>
        run<{ status: string; n: number; waited: number }>(
          `SELECT status, count(*)::int AS n, extract(epoch FROM now() - min(requested_at))::float AS waited
             FROM organization_exports WHERE status IN ('queued', 'running') GROUP BY status`,
        ),
      ONE_STATEMENT,
    );
    return new Map(rows.map((row) => [row.status, { count: row.n, waitedSeconds: row.waited }]));
  }

  /** Where the job is, and its claim renewed. */
  async progress(id: string, phase: string, rows: number, claimMs: number): Promise<void> {
    await acrossOrganizations(this.knex, (trx) =>
      trx.raw(
        `UPDATE organization_exports SET phase = ?, rows_written = ?, claimed_until = now() + make_interval(secs => ?)
          WHERE id = ? AND status = 'running'`,
        [phase, rows, claimMs / 1000, id],
      ),
    );
  }

  /** The claim renewed, nothing else: a runner busy in one long phase (an owner's part) keeps its job. */
  async renewClaim(id: string, claimMs: number): Promise<void> {
    await acrossOrganizations(this.knex, (trx) =>
      trx.raw(
        `UPDATE organization_exports SET claimed_until = now() + make_interval(secs => ?)
          WHERE id = ? AND status = 'running'`,
        [claimMs / 1000, id],
      ),
    );
  }

  /** False when the export is no longer running (its organization's erasure ended it): its archive is not kept. */
  async complete(id: string, archive: { sizeBytes: number; sha256: string }, rows: number): Promise<boolean> {
    const { rowCount } = await acrossOrganizations(this.knex, (trx) =>
      trx.raw<{ rowCount: number }>(
        `UPDATE organization_exports
            SET status = 'completed', phase = 'done', rows_written = ?, size_bytes = ?, sha256 = ?,
                completed_at = now(), expires_at = now() + make_interval(days => ?), claimed_until = NULL
          WHERE id = ? AND status = 'running'`,
        [rows, archive.sizeBytes, archive.sha256, EXPORT_RETENTION_DAYS, id],
      ),
    );
    return rowCount > 0;
  }

  /**
   * Ends the exports of an organization being erased and answers those whose archive or parts may be in the store:
   * the queued, running and completed ones become failed (a running job then keeps nothing: `complete`), failed ones
   * are answered too (a job's own clean-up is best effort, and an erasure killed after this resumes with them) until
   * `markErased` says their objects are deleted.
   */
  async endForErasure(organizationId: number): Promise<string[]> {
    return inOrganization(this.knex, organizationId, async (trx) => {
      await trx.raw(
        `UPDATE organization_exports
            SET status = 'failed', failure_reason = 'the organization is being erased',
                completed_at = coalesce(completed_at, now()), claimed_until = NULL
          WHERE organization_id = ? AND status IN ('queued', 'running', 'completed')`,
        [organizationId],
      );
      const { rows } = await trx.raw<{ rows: { id: string }[] }>(
        `SELECT id FROM organization_exports WHERE organization_id = ? AND status = 'failed'`,
        [organizationId],
      );
      return rows.map((row) => row.id);
    });
  }

  /** The exports `endForErasure` answered, once their archives and parts are deleted from the store. */
  async markErased(organizationId: number, ids: string[]): Promise<void> {
    await inOrganization(this.knex, organizationId, (trx) =>
      trx.raw(
        `UPDATE organization_exports SET status = 'expired', size_bytes = NULL, sha256 = NULL
          WHERE organization_id = ? AND id = ANY(?::uuid[]) AND status = 'failed'`,
        [organizationId, ids],
      ),
    );
  }

  async fail(id: string, reason: string): Promise<void> {
    await acrossOrganizations(this.knex, (trx) =>
      trx.raw(
        `UPDATE organization_exports
            SET status = 'failed', failure_reason = ?, completed_at = now(), claimed_until = NULL
          WHERE id = ?`,
        [reason.slice(0, 500), id],
      ),
    );
  }

  /** Completed exports past their expiry, oldest first (at most `limit`). */
  async expiredArchives(limit: number): Promise<ExportRow[]> {
    return acrossOrganizations(this.knex, async (trx) => {
      const { rows } = await trx.raw<{ rows: ExportRow[] }>(
        `SELECT * FROM organization_exports WHERE status = 'completed' AND expires_at <= now()
          ORDER BY expires_at LIMIT ?`,
        [limit],
      );
      return rows;
    });
  }

  /** Marks an export expired once its archive is deleted, with an entry in its organization's trail. */
  async markExpired(row: ExportRow): Promise<void> {
    await acrossOrganizations(this.knex, async (trx) => {
      const { rowCount } = await trx.raw<{ rowCount: number }>(
        `UPDATE organization_exports SET status = 'expired', size_bytes = NULL, sha256 = NULL
          WHERE id = ? AND status = 'completed'`,
        [row.id],
      );
      if (rowCount)
        await recordExportEvent(trx, Number(row.organization_id), row.id, 'expire', {
          actor: 'housekeeping',
          requestId: '',
        });
    });
  }
}
