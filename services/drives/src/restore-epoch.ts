// The database's restore epoch on the Drives service's page positions (CONTRACT §8; docs/architecture.md, "Restore
// epochs"). After a point-in-time restore a sync client may hold a cursor that read rows the restored database no longer
// has; continuing from it would skip whatever is written again under new ids. The epoch is PostgreSQL's own: the system
// identifier (a new cluster) and the timeline (every archive recovery and every promotion starts a new one), so nothing
// in the restore procedure has to remember to bump it.
import { acrossOrganizations, type Knex } from '@mileage/runtime/database';

/** A row of restore_epochs: an epoch and the newest change the database held when it was first seen in it. */
export interface EpochRecord {
  epoch: string;
  /** Null for the first epoch of a database (nothing was restored) and when the restored database held no changes. */
  restorePoint: Date | null;
}

/**
 * Whether a position read at `readAt` in `cursorEpoch` is still good in `current`. In the same epoch: yes. From an
 * earlier epoch of this history: only when it was read no later than the restore point of every epoch after it (the
 * newest change the restored database held: whatever the cursor saw is still there; a cursor read after it is refused
 * even when nothing it saw was lost, which a resync only repeats). An epoch the history does not hold (a cursor of a
 * timeline the restore went back before, or of another database): no.
 */
export function positionSurvives(
  history: readonly EpochRecord[],
  current: string,
  cursorEpoch: string,
  readAt: Date,
): boolean {
  if (cursorEpoch === current) return true;
  const from = history.findIndex((e) => e.epoch === cursorEpoch);
  if (from < 0) return false;
  return history
    .slice(from + 1)
    .every((later) => later.restorePoint !== null && readAt.getTime() <= later.restorePoint.getTime());
}

/** The epoch now: `<system identifier>.<timeline>` (the timeline from the current WAL file's name, exact at once). */
export const CURRENT_EPOCH_SQL = `
  SELECT s.system_identifier::text || '.' || ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int
         AS epoch
    FROM pg_control_system() s`;

/**
 * The newest change the database held when its epoch began. Exact where the server that ran the recovery (or was
 * promoted) is the one serving: the commit time of the last transaction it replayed (pg_last_xact_replay_timestamp(),
 * which stays at that value after recovery). After a restart of that server it is NULL, and the newest change to the
 * drive lists written before this server started stands in (a restored server is started for recovery before anything
 * writes in its new epoch). Across organizations: a restore is of all.
 */
const NEWEST_CHANGE_SQL = `
  SELECT coalesce(pg_last_xact_replay_timestamp(), (
    SELECT max(t) FROM (
      SELECT max(modified_at) AS t FROM drives WHERE modified_at <= pg_postmaster_start_time()
      UNION ALL SELECT max(modified_at) FROM drive_reports WHERE modified_at <= pg_postmaster_start_time()
      UNION ALL SELECT max(modified_at) FROM drive_tombstones WHERE modified_at <= pg_postmaster_start_time()
      UNION ALL SELECT max(modified_at) FROM report_tombstones WHERE modified_at <= pg_postmaster_start_time()
    ) changes)) AS newest`;

export interface RestoreEpochView {
  current: string;
  history: readonly EpochRecord[];
}

/**
 * The database's epoch and its history, read at most every `refreshMs` (a restore replaces the database under the
 * service; its processes are restarted with it, and a running one notices within refreshMs). The first sight of an
 * epoch records it with its restore point; every replica may race to, the first one's row stays.
 */
export class RestoreEpochs {
  private cached: { at: number; view: Promise<RestoreEpochView> } | undefined;

  constructor(
    private readonly knex: Knex,
    private readonly refreshMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  view(): Promise<RestoreEpochView> {
    const at = this.now();
    if (!this.cached || at - this.cached.at >= this.refreshMs) {
      const view = this.read();
      // A failed read is not kept: the next call tries again.
      view.catch(() => {
        if (this.cached?.view === view) this.cached = undefined;
      });
      this.cached = { at, view };
    }
    return this.cached.view;
  }

  private async read(): Promise<RestoreEpochView> {
    return acrossOrganizations(this.knex, async (trx) => {
      const { rows } = (await trx.raw(CURRENT_EPOCH_SQL)) as { rows: { epoch: string }[] };
      const current = rows[0]!.epoch;
      const known = await trx('restore_epochs').where({ epoch: current }).first('seq');
      if (!known) {
        const first = !(await trx('restore_epochs').first('seq'));
        const restorePoint = first
          ? null
          : (((await trx.raw(NEWEST_CHANGE_SQL)) as { rows: { newest: Date | null }[] }).rows[0]!.newest ?? null);
        await trx.raw(
          'INSERT INTO restore_epochs (epoch, restore_point) VALUES (?, ?) ON CONFLICT (epoch) DO NOTHING',
          [current, restorePoint],
        );
      }
      const history = (await trx('restore_epochs').orderBy('seq').select('epoch', 'restore_point')) as {
        epoch: string;
        restore_point: Date | null;
      }[];
      return { current, history: history.map((r) => ({ epoch: r.epoch, restorePoint: r.restore_point })) };
    });
  }
}
