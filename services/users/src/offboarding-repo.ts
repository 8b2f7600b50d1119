import type { usersV1 } from '@mileage/proto';
import { inOrganization, type Knex } from '@mileage/runtime/database';
import { dateToTimestamp } from '@mileage/runtime/formats';
import { ACTIVE } from './organizations-repo';

/** The grace period of an offboarding when the operator names none (CONTRACT §8). */
export const DEFAULT_GRACE_DAYS = 30;
/**
 * Days after an erasure's end until no backup holds the data: the backup retention window plus two backup intervals
 * (docs/operations.md, "Backups and restore"; ERASURE_BACKUPS_HOLD_DAYS).
 */
export const DEFAULT_BACKUPS_HOLD_DAYS = 32;

/** An offboarding whose erasure is due: its grace period is over and its erasure has not finished. */
const ERASURE_DUE = 'erase_after <= now() AND erasure_finished_at IS NULL';

interface OffboardingRow {
  organization_id: string;
  requested_at: Date;
  erase_after: Date;
  erasure_started_at: Date | null;
  erasure_finished_at: Date | null;
  backups_hold_until: Date | null;
  erased_rows: Record<string, number> | null;
}

function toOffboarding(row: OffboardingRow): usersV1.Offboarding {
  return {
    organizationId: Number(row.organization_id),
    requestedAt: dateToTimestamp(row.requested_at),
    eraseAfter: dateToTimestamp(row.erase_after),
    ...(row.erasure_started_at ? { erasureStartedAt: dateToTimestamp(row.erasure_started_at) } : {}),
    ...(row.erasure_finished_at ? { erasureFinishedAt: dateToTimestamp(row.erasure_finished_at) } : {}),
    ...(row.backups_hold_until ? { backupsHoldUntil: dateToTimestamp(row.backups_hold_until) } : {}),
    erasedRows: row.erased_rows ?? {},
  };
}

/**
 * The operator's offboarding records (`organization_offboardings`): across organizations by nature, as the
 * organizations table itself, and outliving the organization's row as its erasure receipt.
 */
export class OffboardingRepository {
  constructor(private readonly knex: Knex) {}

  async get(organizationId: number): Promise<usersV1.Offboarding | undefined> {
    const row = (await this.knex('organization_offboardings').where({ organization_id: organizationId }).first()) as
      OffboardingRow | undefined;
    return row ? toOffboarding(row) : undefined;
  }

  /** Starts an offboarding; undefined when the organization does not exist or is already being offboarded. */
  async start(organizationId: number, graceDays: number): Promise<usersV1.Offboarding | undefined> {
    const { rows } = await this.knex.raw<{ rows: OffboardingRow[] }>(
      `INSERT INTO organization_offboardings (organization_id, erase_after)
       SELECT id, now() + make_interval(days => ?) FROM organizations WHERE id = ?
       ON CONFLICT (organization_id) DO NOTHING RETURNING *`,
      [graceDays, organizationId],
    );
    return rows[0] && toOffboarding(rows[0]);
  }

  /** The ids of the organization's active SCIM secret tokens (inside it: the table's row-level security). */
  activeScimTokenIds(organizationId: number): Promise<string[]> {
    return inOrganization(this.knex, organizationId, async (trx) =>
      (
        await trx.raw<{ rows: { id: string }[] }>(
          `SELECT id FROM scim_tokens WHERE organization_id = ? AND ${ACTIVE}`,
          [organizationId],
        )
      ).rows.map((row) => row.id),
    );
  }

  /** Cancels an offboarding whose erasure has not started: the row goes, and with it the suspension. */
  async cancel(organizationId: number): Promise<usersV1.Offboarding | undefined> {
    const rows = (await this.knex('organization_offboardings')
      .where({ organization_id: organizationId })
      .whereNull('erasure_started_at')
      .delete()
      .returning('*')) as OffboardingRow[];
    return rows[0] && toOffboarding(rows[0]);
  }

  /** The organizations whose erasure is due (their grace period over, the erasure not finished), the oldest first. */
  async due(): Promise<number[]> {
    const rows: { organization_id: string }[] = await this.knex('organization_offboardings')
      .whereRaw(ERASURE_DUE)
      .orderBy('erase_after')
      .select('organization_id');
    return rows.map((row) => Number(row.organization_id));
  }

  /** How many erasures are due, and how long the oldest has waited past its date (0: none). */
  async dueLag(): Promise<{ due: number; overdueSeconds: number }> {
    const { rows } = await this.knex.raw<{ rows: { n: number; overdue: number | null }[] }>(
      `SELECT count(*)::int AS n, extract(epoch FROM now() - min(erase_after))::float AS overdue
         FROM organization_offboardings WHERE ${ERASURE_DUE}`,
    );
    return { due: rows[0]?.n ?? 0, overdueSeconds: rows[0]?.overdue ?? 0 };
  }

  /** Marks the erasure begun, once its grace period is over; the record as it then is. */
  async markStarted(organizationId: number): Promise<usersV1.Offboarding | undefined> {
    await this.knex('organization_offboardings')
      .where({ organization_id: organizationId })
      .where('erase_after', '<=', this.knex.fn.now())
      .whereNull('erasure_started_at')
      .update({ erasure_started_at: this.knex.fn.now() });
    return this.get(organizationId);
  }

  /** Writes the receipt of a started erasure, once (a second call leaves the first receipt). */
  async finish(organizationId: number, erasedRows: Record<string, number>, backupsHoldDays: number): Promise<void> {
    await this.knex.raw(
      `UPDATE organization_offboardings
          SET erasure_finished_at = now(), erased_rows = ?::jsonb,
              backups_hold_until = now() + make_interval(days => ?)
        WHERE organization_id = ? AND erasure_started_at IS NOT NULL AND erasure_finished_at IS NULL`,
      [JSON.stringify(erasedRows), backupsHoldDays, organizationId],
    );
  }
}
