// The data lifecycle's metrics (CONTRACT §8) that the Users service owns: organization exports as they end, the ones
// waiting, and how far the offboardings' erasures are behind their dates — the lag that shows an `erase-due` that no
// longer runs before a legal deadline passes (docs/operations.md, "Observing").
import type { Knex } from '@mileage/runtime/database';
import { sharedWhileReading, type Metrics } from '@mileage/runtime/telemetry';
import { ExportJobs } from './exports-repo';
import { OffboardingRepository } from './offboarding-repo';

/** How an export's job ended: its record's status, or the erasure of its organization that ended it. */
export type ExportOutcome = 'completed' | 'failed' | 'ended_by_erasure' | 'expired';

/** Seconds from an export's request to its archive: seconds for a small organization, minutes for a large one. */
const EXPORT_DURATION_BUCKETS = [5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200];

export interface ExportMetrics {
  /** An export's job ended (`completed`: its time from the request is observed too), or its archive expired. */
  ended(outcome: ExportOutcome, requestedAt?: Date): void;
}

export function exportMetrics(metrics: Metrics): ExportMetrics {
  const ends = metrics.counter({
    name: 'organization_exports_total',
    help: "Organization exports ended, by outcome: completed, failed, ended_by_erasure, or the archive's expiry.",
    labelNames: ['outcome'] as const,
  });
  const duration = metrics.histogram({
    name: 'organization_export_duration_seconds',
    help: 'From an organization export requested to its archive ready.',
    buckets: EXPORT_DURATION_BUCKETS,
  });
  return {
    ended(outcome, requestedAt) {
      ends.inc({ outcome });
      if (outcome === 'completed' && requestedAt) duration.observe((Date.now() - requestedAt.getTime()) / 1000);
    },
  };
}

/**
 * Gauges read from the database at each scrape (every replica answers the same; alert on their max): exports waiting
 * and running, the oldest one's wait, and the erasures due but not finished with the oldest one's delay.
 */
export function registerLifecycleGauges(metrics: Metrics, knex: Knex): void {
  const exportsInProgress = sharedWhileReading(() => new ExportJobs(knex).inProgress());
  metrics.gauge({
    name: 'organization_exports_in_progress',
    help: 'Organization exports queued and running.',
    labelNames: ['status'] as const,
    async collect() {
      const byStatus = await exportsInProgress();
      for (const status of ['queued', 'running']) this.set({ status }, byStatus.get(status)?.count ?? 0);
    },
  });
  metrics.gauge({
    name: 'organization_export_oldest_queued_seconds',
    help: 'How long the oldest queued organization export has waited for a runner (0: none waiting).',
    async collect() {
      this.set((await exportsInProgress()).get('queued')?.waitedSeconds ?? 0);
    },
  });
  const erasuresDue = sharedWhileReading(() => new OffboardingRepository(knex).dueLag());
  metrics.gauge({
    name: 'organization_erasures_due',
    help: 'Offboarded organizations whose grace period is over and whose erasure has not finished.',
    async collect() {
      this.set((await erasuresDue()).due);
    },
  });
  metrics.gauge({
    name: 'organization_erasure_overdue_seconds',
    help: 'How long the oldest erasure due (grace period over, erasure not finished) has waited past its date (0: none).',
    async collect() {
      this.set((await erasuresDue()).overdueSeconds);
    },
  });
}
