// The verdict of `npm run bench:export`: issue 43's targets checked on the measured figures, and the exit status.
// Pure: no processes, no clock.
import { percentile } from './breakdown';
import type { CpuReading } from './proc';

/** Issue 43's targets for an export and an erasure at scale. */
export const EXPORT_TARGETS = {
  /** Every process's resident memory grows at most this much (MB) while the export runs. */
  rssGrowthMb: 100,
  /**
   * The export's reported drives per second over PostgreSQL's own COPY of the same query's rows, in the same run and
   * beside the same load as the export.
   */
  copyRatio: 0.3,
  /** The other organization's /v1 p99 meanwhile over its quiet p99 (before and after, in the mean): export, erasure. */
  p99Ratio: 1.5,
};

/** The archive's manifest (CONTRACT §8), as much of it as the bench reads. */
export interface ExportManifest {
  format: string;
  files: { name: string; rows: number; sha256: string }[];
}

/** What the export client (export-client.ts) prints: seconds from the request. */
export interface ExportClientResult {
  id: string;
  /**
   * Each phase of `progress` (or status) when first seen (`wallMs`, the machine's clock: Date.now(), which the load's
   * responses are timed on too, p99ByPhase), in order; the last is `completed`.
   */
  phases: { phase: string; wallMs: number; rows: number }[];
  readySeconds: number;
  downloadedSeconds: number;
  /** When the download ended, on the phases' clock. */
  downloadedWallMs: number;
  sizeBytes: number;
  /** The export's own requests answered 503 or 429 (then asked again): when, and the answer. */
  refusals: string[];
  manifest: ExportManifest;
}

/** The Drives service's phase of an export's progress (export-job.ts names it after its owner). */
export const DRIVES_PHASE = 'reported_drives';

/**
 * Seconds a phase took as the polls saw it: from when it was first seen to when the next one was (undefined when it
 * was never seen: a phase shorter than a poll's interval).
 */
export function phaseSeconds(phases: ExportClientResult['phases'], phase: string): number | undefined {
  const i = phases.findIndex((p) => p.phase === phase);
  if (i < 0 || i === phases.length - 1) return undefined;
  return (phases[i + 1]!.wallMs - phases[i]!.wallMs) / 1000;
}

/** The rows of one file of the manifest (0 when it has none of that name). */
export const manifestRows = (manifest: ExportManifest, name: string): number =>
  manifest.files.find((f) => f.name === name)?.rows ?? 0;

/** Rows per second, or 0 when no time was measured. */
export const perSecond = (rows: number, seconds: number | undefined): number =>
  seconds && seconds > 0 ? rows / seconds : 0;

/** A p99 over a quiet p99, the quiet one taken as at least 1 ms (a sub-millisecond p99 is noise), as verdict.ratios. */
export const p99Ratio = (quietMs: number, loadedMs: number): number => loadedMs / Math.max(quietMs, 1);

/** Each process's growth in MB: its highest reading during the run less its reading just before. */
export function rssGrowth(before: Record<string, number>, peak: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.keys(before).map((name) => [name, Math.max(0, (peak[name] ?? before[name]!) - before[name]!)]),
  );
}

/** The export's checks by name. */
export function exportChecks(figures: {
  rssGrowthMb: Record<string, number>;
  copyRatio: number;
  p99Ratio: number;
}): Record<string, boolean> {
  return {
    ...Object.fromEntries(
      Object.entries(figures.rssGrowthMb).map(([name, mb]) => [
        `export RSS growth ${name}`,
        mb <= EXPORT_TARGETS.rssGrowthMb,
      ]),
    ),
    'export rows/s vs COPY': figures.copyRatio >= EXPORT_TARGETS.copyRatio,
    'export: other organization p99': figures.p99Ratio <= EXPORT_TARGETS.p99Ratio,
  };
}

/** The erasure's check: the other organization's p99 while it runs. */
export const erasureChecks = (figures: { p99Ratio: number }): Record<string, boolean> => ({
  'erasure: other organization p99': figures.p99Ratio <= EXPORT_TARGETS.p99Ratio,
});

/**
 * 1 when something failed (a request of the load, the export, the erasure) or, at full size, a target was missed; a
 * smoke run's small sizes are noise, so there its missed targets print without failing it.
 */
export function exportExitStatus(failures: number, missedTargets: number, smoke: boolean): 0 | 1 {
  return failures > 0 || (!smoke && missedTargets > 0) ? 1 : 0;
}

/**
 * The phases with the download as one more: from `completed` (renamed `download`) to the download's end. The client
 * downloads within the loaded window, so its responses count in the run's p99 too.
 */
export const phasesWithDownload = (outcome: Pick<ExportClientResult, 'phases' | 'downloadedWallMs'>) => [
  ...outcome.phases.map((p) => (p.phase === 'completed' ? { ...p, phase: 'download' } : p)),
  { phase: 'downloaded', wallMs: outcome.downloadedWallMs, rows: outcome.phases.at(-1)?.rows ?? 0 },
];

/**
 * The other organization's p99 in each phase of the export (the responses that completed between a phase's first
 * sighting and the next's), so that the run's one p99 can be traced to the phase that made it: `responses` as
 * [Date.now() at the response, latency ms]. Nearest rank; a phase with no response is left out.
 */
export function p99ByPhase(
  responses: readonly (readonly [number, number])[],
  phases: ExportClientResult['phases'],
): { phase: string; p99Ms: number; responses: number }[] {
  const out: { phase: string; p99Ms: number; responses: number }[] = [];
  for (let i = 0; i + 1 < phases.length; i++) {
    const [from, to] = [phases[i]!.wallMs, phases[i + 1]!.wallMs];
    const latencies = responses.filter(([at]) => at >= from && at < to).map(([, ms]) => ms);
    if (latencies.length)
      out.push({ phase: phases[i]!.phase, p99Ms: percentile(latencies, 99), responses: latencies.length });
  }
  return out;
}

/**
 * Each process's busy cores in each phase of the export: its CPU seconds over the wall seconds between the meter's
 * readings nearest the phase's first sighting and the next's (CpuMeter samples every 200 ms), so that a phase's p99
 * (p99ByPhase) can be set beside what ran in it. A phase shorter than the readings resolve is left out.
 */
export function coresByPhase(
  readings: readonly CpuReading[],
  phases: ExportClientResult['phases'],
): { phase: string; seconds: number; cores: Record<string, number> }[] {
  if (!readings.length) return [];
  const nearest = (ms: number) =>
    readings.reduce((best, r) => (Math.abs(r.atMs - ms) < Math.abs(best.atMs - ms) ? r : best));
  const out: { phase: string; seconds: number; cores: Record<string, number> }[] = [];
  for (let i = 0; i + 1 < phases.length; i++) {
    const [from, to] = [nearest(phases[i]!.wallMs), nearest(phases[i + 1]!.wallMs)];
    const seconds = (to.atMs - from.atMs) / 1000;
    if (seconds <= 0) continue;
    const cores: Record<string, number> = {};
    for (const name of Object.keys(to.used)) cores[name] = ((to.used[name] ?? 0) - (from.used[name] ?? 0)) / seconds;
    out.push({ phase: phases[i]!.phase, seconds, cores });
  }
  return out;
}
