import autocannon from 'autocannon';
import { CpuMeter, machineCpuSeconds } from './proc';
import { runWrk } from './wrk';
import type { Target } from './target';

/** autocannon inside the bench's process (the default), or wrk in a process of its own (wrk.ts). */
export type Generator = 'autocannon' | 'wrk';

export interface LoadSettings {
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  generator?: Generator;
  /** Runs between the warm-up and the measured run (e.g. to learn new processes' names). */
  afterWarmup?: () => Promise<void>;
  /**
   * Ends the measured run when it settles, instead of after durationSeconds (autocannon only): the load that runs
   * while something else happens (bench:export's export), as long as it happens. Made once the warm-up is over.
   */
  until?: () => Promise<unknown>;
  /** Each response of a run `until` something settles: when it completed (Date.now()) and its latency (ms). */
  onResponse?: (atMs: number, latencyMs: number) => void;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** What the failed requests were: the count of each non-2xx status, of connection errors and of timeouts. */
  failures: Record<string, number>;
  cpuMicrosPerRequest: number;
  /** CPU µs per request of each server-side process, by the name `serverPids` gave it. */
  cpuByProcess: Record<string, number>;
  /** The measured run on the clock of process.hrtime (µs), which V8's CPU profiles use too (pieces.ts). */
  window: { fromUs: number; toUs: number };
  /**
   * Where the machine's cores went during the measured run: the load generator (the bench process itself, which runs
   * autocannon and the OTLP sink, and wrk's process when it generates), in µs per request and in cores, and the whole
   * machine's busy cores out of all (servers, PostgreSQL, the generator, anything else).
   */
  cores: { generatorMicrosPerRequest: number; generator: number; machineBusy: number; machine: number };
}

/** What run() reads of a result: autocannon's, or several instances' aggregated. */
type RunResult = Pick<autocannon.Result, 'latency' | 'non2xx' | 'errors' | 'timeouts' | 'statusCodeStats'> & {
  requests: { total: number; average: number };
};

/** autocannon's aggregation of instances run with skipAggregateResult (not in its type declarations). */
const aggregate = (
  autocannon as unknown as {
    aggregateResult(results: unknown[], options: { url: string; connections: number }): autocannon.Result;
  }
).aggregateResult;

/** The longest measured run `until` may take (autocannon's runs are bounded by a duration). */
const UNTIL_BOUND_SECONDS = 24 * 3600;

async function run(
  target: Target,
  connections: number,
  duration: number,
  until?: Promise<unknown>,
  onResponse?: LoadSettings['onResponse'],
): Promise<RunResult> {
  if (until) {
    const started = process.hrtime.bigint();
    const urls = [target.url, ...(target.replicas ?? [])];
    if (urls.length > 1) throw new Error('a run until something settles loads one gateway');
    // autocannon's promise is its instance too (its type declarations leave stop() out of the promise).
    const tracker = autocannon({
      url: target.url,
      requests: target.requests.map((r) => ({ method: 'GET' as const, ...r })),
      connections,
      duration: UNTIL_BOUND_SECONDS,
      pipelining: 1,
    }) as Promise<autocannon.Result> & Pick<autocannon.Instance, 'stop' | 'on'>;
    if (onResponse) tracker.on('response', (_client, _status, _bytes, latencyMs) => onResponse(Date.now(), latencyMs));
    // Stopped whether it settles or fails: the caller learns of a failure from its own promise.
    void until.then(
      () => tracker.stop(),
      () => tracker.stop(),
    );
    const result = await tracker;
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return { ...result, requests: { total: result.requests.total, average: result.requests.total / seconds } };
  }
  const options = (url: string, share: number) => ({
    url,
    requests: target.requests.map((r) => ({ method: 'GET' as const, ...r })),
    connections: share,
    duration,
    pipelining: 1,
  });
  const urls = [target.url, ...(target.replicas ?? [])];
  if (urls.length === 1) return autocannon(options(target.url, connections));
  // One instance per replica, its share of the connections; latencies merged from their histograms. Requests per
  // second: all completed over the duration (the instances' per-second samples are not aggregated).
  const shares = urls.map((_, i) => Math.floor(connections / urls.length) + (i < connections % urls.length ? 1 : 0));
  const raw = await Promise.all(
    urls.map((url, i) => autocannon({ ...options(url, Math.max(1, shares[i]!)), skipAggregateResult: true })),
  );
  const result = aggregate(raw, { url: target.url, connections });
  return { ...result, requests: { total: result.requests.total, average: result.requests.total / duration } };
}

/** The failed requests of a run by kind: `{"503": 1, "timeouts": 2}`. */
export function failureKinds(
  result: Pick<RunResult, 'errors' | 'timeouts' | 'statusCodeStats'>,
): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const [code, stats] of Object.entries(result.statusCodeStats ?? {}))
    if (!code.startsWith('2') && (stats.count ?? 0) > 0) kinds[code] = stats.count!;
  // autocannon counts a timeout among its errors too.
  if (result.errors - result.timeouts > 0) kinds.errors = result.errors - result.timeouts;
  if (result.timeouts > 0) kinds.timeouts = result.timeouts;
  return kinds;
}

/** One run of either generator, in the terms measure() reports. */
interface GeneratedLoad {
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  failures: Record<string, number>;
  /** CPU of the generator's own process, when it is not the bench's. */
  generatorProcessMicros: number;
}

async function generate(
  target: Target,
  connections: number,
  duration: number,
  generator: Generator,
  until?: Promise<unknown>,
  onResponse?: LoadSettings['onResponse'],
): Promise<GeneratedLoad> {
  if (generator === 'wrk') {
    if (until) throw new Error('a run until something settles is autocannon only');
    const r = await runWrk(target, connections, duration);
    const failed = (kind: string) => r.failures[kind] ?? 0;
    return {
      requests: r.requests,
      requestsPerSecond: r.requests / r.seconds,
      p50Ms: r.p50Ms,
      p99Ms: r.p99Ms,
      non2xx: failed('status ≥ 400'),
      errors: failed('errors') + failed('timeouts'),
      failures: r.failures,
      generatorProcessMicros: r.cpuMicros,
    };
  }
  const r = await run(target, connections, duration, until, onResponse);
  return {
    requests: r.requests.total,
    requestsPerSecond: r.requests.average,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    failures: failureKinds(r),
    generatorProcessMicros: 0,
  };
}

/** A warm-up, then the measured run; CPU is the server-side processes' user+system time over the measured run. */
export async function measure(
  target: Target,
  serverPids: () => Map<number, string>,
  settings: LoadSettings,
): Promise<LoadResult> {
  const generator = settings.generator ?? 'autocannon';
  await generate(target, settings.connections, settings.warmupSeconds, generator);
  await settings.afterWarmup?.();
  const meter = new CpuMeter(serverPids);
  const fromUs = Number(process.hrtime.bigint() / 1000n);
  const generatorBefore = process.cpuUsage();
  const machineBefore = machineCpuSeconds();
  const result = await generate(
    target,
    settings.connections,
    settings.durationSeconds,
    generator,
    settings.until?.(),
    settings.onResponse,
  );
  const generatorUsage = process.cpuUsage(generatorBefore);
  const machineAfter = machineCpuSeconds();
  const toUs = Number(process.hrtime.bigint() / 1000n);
  const used = meter.stop();
  const seconds = (toUs - fromUs) / 1e6;
  const generatorMicros = generatorUsage.user + generatorUsage.system + result.generatorProcessMicros;
  const requests = result.requests;
  const cpu = Object.values(used).reduce((a, b) => a + b, 0);
  const cpuByProcess = Object.fromEntries(
    Object.entries(used)
      .filter(([, seconds]) => seconds > 0)
      .map(([name, seconds]) => [name, requests ? Math.round((seconds / requests) * 1e6) : 0]),
  );
  return {
    requestsPerSecond: result.requestsPerSecond,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    requests,
    non2xx: result.non2xx,
    errors: result.errors,
    failures: result.failures,
    cpuMicrosPerRequest: requests ? (cpu / requests) * 1e6 : 0,
    cpuByProcess,
    window: { fromUs, toUs },
    cores: {
      generatorMicrosPerRequest: requests ? Math.round(generatorMicros / requests) : 0,
      generator: generatorMicros / 1e6 / seconds,
      machineBusy: (machineAfter.busy - machineBefore.busy) / seconds,
      machine: (machineAfter.total - machineBefore.total) / seconds,
    },
  };
}
