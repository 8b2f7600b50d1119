// `npm run bench -- --one-connection`: each route's requests sent one at a time over one keep-alive connection, to the
// bare server and to the full path (tracing as deployed: 10 % of requests recorded), then a traced pass whose span
// trees say where the full path's time goes (breakdown.ts).
//
// The traced pass sends every request with a `traceparent` of its own trace id, so that its spans can be told apart,
// but the gateway does not obey a caller's sampled flag (extractEdgeContext: no outsider may force recording), so
// its own sampler still records about one request in ten. The pass therefore breaks down the requests the gateway
// chose to record, and compares their totals with those of the requests it did not: tracing's own cost, measured in
// the same pass, with the deployed configuration and without restarting any process.
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import { breakdownTrace, IncompleteTrace, median, percentile, summarise, type Row, type SummaryRow } from './breakdown';
import type { Target } from './target';
import type { SpanRecord } from './otlp-decode';
import { waitFor } from './proc';
import * as verdict from './verdict';

export interface OneConnectionRoute {
  id: string;
  title: string;
  full: Target;
  bare: Target;
  /** The architecture's floor (floor-server.ts), for the routes it answers. */
  floor?: Target;
}

interface Sample {
  ms: number;
  status: number;
  traceId?: string;
}

export interface SequentialResult {
  requests: number;
  p50Ms: number;
  p99Ms: number;
  /** Requests (warm-up included) not answered 200. */
  failed: number;
  /** What they got instead: the count of each status, or of `no answer` (the connection failed or timed out). */
  failures: Record<string, number>;
  /** Connections the measured requests used: 1 unless the server closed one. */
  connections: number;
}

export interface TracedResult {
  sent: number;
  /** Requests whose trace reached the sink (the gateway's sampler chose them). */
  recorded: number;
  /** Those whose span tree is whole (every gRPC call has its server span), which the breakdown covers. */
  complete: number;
  incomplete: string[];
  recordedP50Ms: number;
  notRecordedP50Ms: number;
  breakdown: Omit<SummaryRow, 'key' | 'parent'>[];
}

export interface OneConnectionResult {
  warmup: number;
  bare: SequentialResult;
  full: SequentialResult;
  /** node:http and the gateway's calls, without its stack: what the hop alone adds to the bare p50. */
  floor?: SequentialResult;
  traced?: TracedResult;
}

/** `count` requests one after another on one keep-alive connection, after `warmup` unmeasured ones. */
async function sequential(target: Target, count: number, warmup: number, traced = false) {
  const url = new URL(target.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<unknown>();
  let failed = 0;
  const failures: Record<string, number> = {};
  const one = (i: number) =>
    new Promise<Sample>((resolve) => {
      const r = target.requests[i % target.requests.length]!;
      const traceId = traced ? randomBytes(16).toString('hex') : undefined;
      const headers = traceId
        ? { ...r.headers, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` }
        : r.headers;
      let settled = false;
      const done = (status: number) => {
        if (settled) return;
        settled = true;
        if (status !== 200) {
          failed++;
          const kind = status === 0 ? 'no answer' : String(status);
          failures[kind] = (failures[kind] ?? 0) + 1;
        }
        resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, status, ...(traceId ? { traceId } : {}) });
      };
      const started = process.hrtime.bigint();
      const req = http.get({ host: url.hostname, port: url.port, path: r.path, headers, agent }, (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode ?? 0));
        res.on('error', () => done(0));
      });
      req.on('socket', (socket) => sockets.add(socket));
      req.on('error', () => done(0));
      // A request that hangs counts as failed rather than stopping the bench.
      req.setTimeout(30_000, () => req.destroy());
    });
  try {
    for (let i = 0; i < warmup; i++) await one(i);
    sockets.clear();
    const samples: Sample[] = [];
    for (let i = 0; i < count; i++) samples.push(await one(warmup + i));
    return { samples, failed, failures, connections: sockets.size };
  } finally {
    agent.destroy();
  }
}

/** ms to the µs, for the results file. */
const us = (n: number) => Math.round(n * 1000) / 1000;

function summary(s: Awaited<ReturnType<typeof sequential>>): SequentialResult {
  const times = s.samples.map((x) => x.ms);
  const [p50Ms, p99Ms] = [us(median(times)), us(percentile(times, 99))];
  return {
    requests: times.length,
    p50Ms,
    p99Ms,
    failed: s.failed,
    failures: s.failures,
    connections: s.connections,
  };
}

async function sink<T>(sinkUrl: string, path: string, method = 'GET'): Promise<T> {
  const res = await fetch(`${sinkUrl}${path}`, { method, signal: AbortSignal.timeout(30_000) });
  if (!res.ok) throw new Error(`OTLP sink ${path}: ${res.status}`);
  return (await res.json()) as T;
}

/**
 * Resolves once the processes have exported what the last traced request recorded: their batch span processors send
 * what has ended at most OTEL_BSP_SCHEDULE_DELAY (the SDK's default 5 s, the variable they read too) later.
 */
async function exported(sinkUrl: string, lastRequestAt: number): Promise<void> {
  const delayMs = Number(process.env.OTEL_BSP_SCHEDULE_DELAY ?? 5_000);
  await waitFor(
    'the traced spans to be exported',
    async () => {
      if (Date.now() - lastRequestAt < delayMs + 1_000) return false;
      const stats = await sink<{ idleMs: number | null }>(sinkUrl, '/stats');
      return stats.idleMs === null || stats.idleMs >= 250;
    },
    delayMs + 30_000,
  );
}

const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '–');

/** The printed table of a route's breakdown. */
export function breakdownLines(rows: Omit<SummaryRow, 'key' | 'parent'>[], requests: number): string[] {
  const text = rows.map(
    (r) => `${'  '.repeat(r.depth)}${r.role === 'part' ? '+ ' : '  '}${r.label}${r.calls > 1 ? ` (×${r.calls})` : ''}`,
  );
  const width = Math.max(40, ...text.map((t) => t.length));
  return [
    `    ${'ms per request over the recorded ones'.padEnd(width)} ${'median'.padStart(7)} ${'mean'.padStart(7)}`,
    ...rows.map((r, i) => {
      const figures = `${ms(r.medianMs).padStart(7)} ${ms(r.meanMs).padStart(7)}`;
      const some = r.present < requests ? `  (in ${r.present} of ${requests})` : '';
      return `    ${text[i]!.padEnd(width)} ${figures}${some}`;
    }),
    `    + the parts: each request's add up to its client total (so their means add up to the mean total; medians need`,
    `      not). Hop: the wire, TLS, HTTP/2, either event loop and the callee's work before its server span starts.`,
    `      ∥ a call that ran beside the one that ended later (not on the critical path, not added).`,
    `      (×n): n calls one after another in one request, summed. Calls at once are told apart by start times, which`,
    `      the SDK records in whole ms: the rows around them are known to about 1 ms.`,
  ];
}

/** The mode: both targets of every route, then the traced pass of every route; figures printed through `write`. */
export async function oneConnection(
  routes: OneConnectionRoute[],
  options: { requests: number; sinkUrl: string; write: (text: string) => void },
): Promise<{ results: Record<string, OneConnectionResult>; checks: Record<string, boolean>; failures: number }> {
  const { requests: n, sinkUrl, write } = options;
  const warmup = Math.max(20, Math.round(n / 4));
  const margin = verdict.TARGETS.oneConnectionP50MarginMs;
  const results: Record<string, OneConnectionResult> = {};
  const checks: Record<string, boolean> = {};
  const traced = new Map<string, Sample[]>();
  let failures = 0;
  write(
    `\nOne connection: ${n} requests one at a time on one keep-alive connection per target, after ${warmup} ` +
      `warm-up requests; tracing as deployed (the sampler's default ratio). ` +
      `Target: full p50 ≤ bare p50 + ${margin} ms.\n`,
  );
  await sink(sinkUrl, '/record?on=1', 'POST');
  try {
    let lastRequestAt = Date.now();
    for (const r of routes) {
      const bare = summary(await sequential(r.bare, n, warmup));
      const full = summary(await sequential(r.full, n, warmup));
      const floor = r.floor ? summary(await sequential(r.floor, n, warmup)) : undefined;
      const pass = await sequential(r.full, n, 0, true);
      lastRequestAt = Date.now();
      traced.set(r.id, pass.samples);
      failures += bare.failed + full.failed + pass.failed + (floor?.failed ?? 0);
      results[r.id] = { warmup, bare, full, ...(floor && { floor }) };
      Object.assign(checks, verdict.oneConnectionChecks(r.id, bare.p50Ms, full.p50Ms));
      const row = (name: string, x: SequentialResult) =>
        `  ${name.padEnd(24)} p50 ${ms(x.p50Ms).padStart(6)} ms  p99 ${ms(x.p99Ms).padStart(6)} ms` +
        (x.connections > 1 ? `  (${x.connections} connections)` : '') +
        (x.failed ? `  ERRORS ${x.failed} ${JSON.stringify(x.failures)}` : '');
      const met = checks[`${r.id} one-connection p50`] ? 'met' : 'missed';
      write(
        [
          r.title,
          row('bare node:http + pg', bare),
          ...(floor ? [row('floor: the hop, no stack', floor)] : []),
          row('full path', full),
          `  full − bare p50 ${ms(full.p50Ms - bare.p50Ms)} ms (target ≤ ${margin} ms): ${met}` +
            (floor
              ? `; floor − bare ${ms(floor.p50Ms - bare.p50Ms)} ms (the hop), full − floor ${ms(full.p50Ms - floor.p50Ms)} ms (the gateway's stack)`
              : ''),
          '',
        ].join('\n') + '\n',
      );
    }

    // The sink has every trace once the processes have exported; a route none of whose traced requests the gateway
    // happened to record (possible with few requests) gets another pass, so that the breakdown never silently lacks.
    let spans: SpanRecord[] = [];
    for (let round = 0; ; round++) {
      await exported(sinkUrl, lastRequestAt);
      spans = await sink<SpanRecord[]>(sinkUrl, '/spans');
      const recordedIds = new Set(spans.map((s) => s.traceId));
      const lacking = routes.filter((r) => !traced.get(r.id)!.some((s) => recordedIds.has(s.traceId!)));
      if (!lacking.length || round === 3) break;
      for (const r of lacking) {
        const pass = await sequential(r.full, n, 0, true);
        failures += pass.failed;
        traced.get(r.id)!.push(...pass.samples);
      }
      lastRequestAt = Date.now();
    }
    const { problems } = await sink<{ problems: number }>(sinkUrl, '/stats');
    if (problems) throw new Error(`the OTLP sink could not decode ${problems} exports`);

    const byTrace = new Map<string, SpanRecord[]>();
    for (const s of spans) byTrace.set(s.traceId, [...(byTrace.get(s.traceId) ?? []), s]);
    for (const r of routes) {
      const samples = traced.get(r.id)!;
      const recorded = samples.filter((s) => byTrace.has(s.traceId!));
      const rows: Row[][] = [];
      const incomplete: string[] = [];
      for (const s of recorded) {
        try {
          rows.push(breakdownTrace(byTrace.get(s.traceId!)!, s.ms));
        } catch (err) {
          if (!(err instanceof IncompleteTrace)) throw err;
          incomplete.push(err.message);
        }
      }
      const t: TracedResult = {
        sent: samples.length,
        recorded: recorded.length,
        complete: rows.length,
        incomplete: [...new Set(incomplete)].slice(0, 5),
        recordedP50Ms: us(median(recorded.map((s) => s.ms))),
        notRecordedP50Ms: us(median(samples.filter((s) => !byTrace.has(s.traceId!)).map((s) => s.ms))),
        breakdown: summarise(rows).map(({ key: _k, parent: _p, medianMs, meanMs, ...rest }) => ({
          ...rest,
          medianMs: us(medianMs),
          meanMs: us(meanMs),
        })),
      };
      results[r.id]!.traced = t;
      const lines = [
        `Traced pass, ${r.title}: ${t.sent} requests, each with a traceparent of its own; the gateway's sampler ` +
          `recorded ${t.recorded} (${ms((100 * t.recorded) / t.sent)} %), ${t.complete} with a whole span tree` +
          (t.incomplete.length ? ` (others: ${t.incomplete.join('; ')})` : ''),
        `  client total p50: recorded ${ms(t.recordedP50Ms)} ms, not recorded ${ms(t.notRecordedP50Ms)} ms ` +
          `(untraced pass ${ms(results[r.id]!.full.p50Ms)} ms): recording a request's trace adds ` +
          `${ms(t.recordedP50Ms - t.notRecordedP50Ms)} ms to the median`,
      ];
      if (!t.complete) {
        failures++;
        lines.push(`  FAILED: no whole span tree was recorded for this route`);
      } else lines.push(...breakdownLines(t.breakdown, t.complete));
      write(`${lines.join('\n')}\n\n`);
    }
  } finally {
    await sink(sinkUrl, '/record?on=0', 'POST').catch(() => undefined);
  }
  return { results, checks, failures };
}
