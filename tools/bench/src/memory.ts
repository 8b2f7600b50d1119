// Resident memory through a soak: RSS of every process (from /proc) and, where the process serves Prometheus
// metrics, its V8 heap in use (`nodejs_heap_size_used_bytes`), sampled every few seconds. A plateau and a leak end
// alike after five minutes; the slope over the second half tells them apart.
import { rssMb } from './proc';

export interface MemorySample {
  /** Seconds since the sampler started. */
  t: number;
  rssMb: Record<string, number>;
  /** V8 heap in use (MB; live objects and garbage not yet collected), for the processes with a metrics endpoint. */
  heapMb: Record<string, number>;
  /** V8 heap committed (MB): what the heap holds of the process's RSS. */
  heapTotalMb: Record<string, number>;
  /** Seconds spent in garbage collection since the process started (prom-client's `nodejs_gc_duration_seconds`). */
  gcSeconds: Record<string, number>;
}

export interface SeriesSummary {
  idle: number;
  peak: number;
  end: number;
  /** end / idle */
  growth: number;
  /** Least-squares slope over the second half of the samples, MB per minute. */
  secondHalfMbPerMinute: number;
  /** Fitted change over the second half (MB): the slope times the second half's length. */
  secondHalfGrowthMb: number;
  /**
   * The lowest reading of each minute: for the heap in use, close to the live objects after a full collection (the
   * readings between are garbage piling up to the next one), so a leak shows as rising floors.
   */
  minuteFloors: number[];
}

export interface MemorySummary {
  intervalSeconds: number;
  rss: Record<string, SeriesSummary>;
  heap: Record<string, SeriesSummary>;
  heapTotal: Record<string, SeriesSummary>;
  /** Seconds of garbage collection of each process during the soak. */
  gcSeconds: Record<string, number>;
}

/** Slope (units per second) of the least-squares line through (t, v). */
export function slope(points: { t: number; v: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mt = points.reduce((a, p) => a + p.t, 0) / n;
  const mv = points.reduce((a, p) => a + p.v, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.t - mt) * (p.v - mv);
    den += (p.t - mt) ** 2;
  }
  return den ? num / den : 0;
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** The minimum of each `windowSeconds` of the series (the last window may be shorter). */
export function floors(series: { t: number; v: number }[], windowSeconds: number): number[] {
  const out: number[] = [];
  for (const p of series) {
    const i = Math.floor(p.t / windowSeconds);
    out[i] = Math.min(out[i] ?? Infinity, p.v);
  }
  return [...out].map((v) => (v === undefined ? NaN : round(v)));
}

/** Idle, peak, end and second-half slope of one series; `idle` is the value before any load. */
export function summarise(idle: number, series: { t: number; v: number }[]): SeriesSummary {
  const end = series.length ? series[series.length - 1]! : { t: 0, v: idle };
  const start = series.length ? series[0]!.t : 0;
  const mid = start + (end.t - start) / 2;
  const half = series.filter((p) => p.t >= mid);
  const perSecond = slope(half);
  return {
    idle: round(idle),
    peak: round(Math.max(idle, ...series.map((p) => p.v))),
    end: round(end.v),
    growth: round(idle ? end.v / idle : 0, 2),
    secondHalfMbPerMinute: round(perSecond * 60, 2),
    secondHalfGrowthMb: round(perSecond * (end.t - mid)),
    minuteFloors: floors(series, 60),
  };
}

/** MB of the named Prometheus sample (no labels but the default ones) in a /metrics text, if present. */
export function metricMb(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)`, 'm').exec(text);
  return m ? Number(m[1]) / 2 ** 20 : undefined;
}

/** The sum of every sample of a metric family's `_sum` series (all label values), e.g. GC seconds of every kind. */
export function metricSum(text: string, name: string): number {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)`, 'gm'))) sum += Number(m[1]);
  return sum;
}

async function heapMb(metricsUrl: string): Promise<{ used?: number; total?: number; gc?: number }> {
  try {
    const res = await fetch(metricsUrl, { signal: AbortSignal.timeout(2_000) });
    const text = await res.text();
    return {
      used: metricMb(text, 'nodejs_heap_size_used_bytes'),
      total: metricMb(text, 'nodejs_heap_size_total_bytes'),
      gc: metricSum(text, 'nodejs_gc_duration_seconds_sum'),
    };
  } catch {
    return {};
  }
}

/** Reads every process once: RSS from /proc, V8 heap in use from /metrics where there is one. */
export async function readMemory(
  pids: Record<string, number>,
  metricsUrls: Record<string, string>,
): Promise<Omit<MemorySample, 't'>> {
  const rss: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) {
    try {
      rss[name] = round(rssMb(pid));
    } catch {
      // The process ended.
    }
  }
  const heap: Record<string, number> = {};
  const heapTotal: Record<string, number> = {};
  const gc: Record<string, number> = {};
  await Promise.all(
    Object.entries(metricsUrls).map(async ([name, url]) => {
      const mb = await heapMb(url);
      if (mb.used !== undefined) heap[name] = round(mb.used);
      if (mb.total !== undefined) heapTotal[name] = round(mb.total);
      if (mb.gc !== undefined) gc[name] = round(mb.gc, 3);
    }),
  );
  return { rssMb: rss, heapMb: heap, heapTotalMb: heapTotal, gcSeconds: gc };
}

/** Samples every `intervalSeconds` until stopped; one sample at start and one at stop. */
export class MemorySampler {
  readonly samples: MemorySample[] = [];
  private readonly started = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private pending: Promise<void> = Promise.resolve();

  constructor(
    private readonly pids: Record<string, number>,
    private readonly metricsUrls: Record<string, string>,
    readonly intervalSeconds = 5,
  ) {
    this.take();
    this.timer = setInterval(() => this.take(), intervalSeconds * 1000);
  }

  private take(): void {
    const t = (Date.now() - this.started) / 1000;
    this.pending = this.pending.then(async () => {
      this.samples.push({ t: round(t), ...(await readMemory(this.pids, this.metricsUrls)) });
    });
  }

  async stop(): Promise<MemorySample[]> {
    clearInterval(this.timer);
    this.take();
    await this.pending;
    return this.samples;
  }
}

/** Summary of a soak's samples against the idle reading taken before any load. */
export function summariseSoak(
  idle: Omit<MemorySample, 't'>,
  samples: MemorySample[],
  intervalSeconds: number,
): MemorySummary {
  const of = (idleOf: Record<string, number>, pick: (s: MemorySample) => Record<string, number>) =>
    Object.fromEntries(
      Object.keys(idleOf).map((name) => [
        name,
        summarise(
          idleOf[name]!,
          samples.filter((s) => pick(s)[name] !== undefined).map((s) => ({ t: s.t, v: pick(s)[name]! })),
        ),
      ]),
    );
  return {
    intervalSeconds,
    rss: of(idle.rssMb, (s) => s.rssMb),
    heap: of(idle.heapMb, (s) => s.heapMb),
    heapTotal: of(idle.heapTotalMb, (s) => s.heapTotalMb),
    gcSeconds: Object.fromEntries(
      Object.keys(idle.gcSeconds).map((name) => {
        const seen = samples.filter((s) => s.gcSeconds[name] !== undefined);
        return [name, seen.length ? round(seen[seen.length - 1]!.gcSeconds[name]! - seen[0]!.gcSeconds[name]!, 2) : 0];
      }),
    ),
  };
}
