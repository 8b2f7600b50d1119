// The verdict of a chaos run: each fault's requests judged against what the documentation promises, one table row per
// fault, and the exit code (non-zero when a required expectation failed). Pure: no processes, no clock.

/** One request the load sent: when it started and ended (ms), what it got (status 0: no HTTP answer). */
export interface Sample {
  startedAt: number;
  endedAt: number;
  status: number;
  /** The answer carried `Retry-After`. */
  retryAfter: boolean;
  /** Which stream of requests: the main mix, or a probe a fault adds (e.g. a token signed with a new key). */
  stream: string;
  route: string;
  /** Of an answer that was not 2xx: its X-Request-Id (to find it in the logs) and what its body said. */
  failure?: { requestId: string; detail: string };
}

export interface Expectation {
  /** What the documentation promises, as the table shows it. */
  text: string;
  /** A failure of a required expectation makes the run fail. */
  required: boolean;
  /** True when this answer is what the fault may give. */
  accepts(sample: Sample): boolean;
  /** Further conditions on the whole window (e.g. "recovered by the end"): a reason when one does not hold. */
  check?(samples: Sample[]): string | undefined;
}

export interface Row {
  fault: string;
  expectation: string;
  required: boolean;
  requests: number;
  failed: number;
  p99Ms: number;
  maxMs: number;
  verdict: 'pass' | 'FAIL' | 'not met (not required)';
  /** Why it failed: the failing statuses and counts, and the window checks that did not hold. */
  notes: string[];
}

/** The q-quantile (0–1) of values by the nearest-rank method; 0 for none. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1]!;
}

/** Judges the samples of one fault's window (origin: its start, for the times the notes give). */
export function judge(fault: string, expectation: Expectation, samples: Sample[], origin?: number): Row {
  const failedSamples = samples.filter((s) => !expectation.accepts(s));
  const durations = samples.map((s) => s.endedAt - s.startedAt);
  const count = (list: Sample[], withRoute: boolean) => {
    const byKey = new Map<string, number>();
    for (const s of list) {
      const key = `${s.status === 0 ? 'no answer' : s.status}${s.retryAfter ? ' (Retry-After)' : ''}${withRoute ? ` on ${s.route}` : ''}`;
      byKey.set(key, (byKey.get(key) ?? 0) + 1);
    }
    return [...byKey].sort((a, b) => b[1] - a[1]).map(([key, n]) => `${n} × ${key}`);
  };
  const notes = count(failedSamples, true);
  if (failedSamples.length && origin !== undefined) {
    const at = (ms: number) => `+${((ms - origin) / 1000).toFixed(1)} s`;
    const starts = failedSamples.map((s) => s.startedAt);
    notes.push(`failed requests started from ${at(Math.min(...starts))} to ${at(Math.max(...starts))}`);
  }
  const expectedErrors = samples.filter((s) => expectation.accepts(s) && !is2xx(s));
  if (expectedErrors.length) notes.push(`as expected: ${count(expectedErrors, false).join(', ')}`);
  if (samples.length === 0) notes.push('no requests were sent');
  const reason = samples.length ? expectation.check?.(samples) : undefined;
  if (reason) notes.push(reason);
  const ok = failedSamples.length === 0 && samples.length > 0 && !reason;
  return {
    fault,
    expectation: expectation.text,
    required: expectation.required,
    requests: samples.length,
    failed: failedSamples.length,
    p99Ms: Math.round(quantile(durations, 0.99)),
    maxMs: Math.round(durations.length ? Math.max(...durations) : 0),
    verdict: ok ? 'pass' : expectation.required ? 'FAIL' : 'not met (not required)',
    notes,
  };
}

/** How many failed requests, and how many log lines, the evidence of a failed fault shows. */
const EVIDENCE_REQUESTS = 5;
const EVIDENCE_LINES = 30;

/**
 * What a failed fault's report shows besides its counts, so that a failure in CI explains itself: the first failed
 * requests (route, status, request id, what the body said) and the replicas' warnings and errors of the window, those
 * that name a failed request first.
 */
export function failureEvidence(failed: Sample[], logLines: { replica: string; line: string }[], origin: number) {
  const ids = new Set(failed.map((s) => s.failure?.requestId).filter((id): id is string => !!id));
  const namesFailed = (line: string) => [...ids].some((id) => line.includes(id));
  const lines = [...logLines].sort((x, y) => Number(namesFailed(y.line)) - Number(namesFailed(x.line)));
  return [
    ...failed.slice(0, EVIDENCE_REQUESTS).map((s) => {
      const at = `+${((s.startedAt - origin) / 1000).toFixed(1)} s`;
      const status = s.status === 0 ? 'no answer' : String(s.status);
      const { requestId = '', detail = '' } = s.failure ?? {};
      return `failed: ${s.route} ${status} at ${at}${requestId ? ` (request ${requestId})` : ''}: ${detail}`;
    }),
    ...(logLines.length ? [`warnings and errors of the replicas in the window (${logLines.length}):`] : []),
    ...lines.slice(0, EVIDENCE_LINES).map(({ replica, line }) => `  ${replica}: ${line}`),
  ];
}

/** A Markdown table (what docs/operations.md carries), then each row's notes. */
export function formatTable(rows: Row[]): string {
  const header = ['fault', 'expectation', 'requests', 'failed', 'p99 ms', 'max ms', 'verdict'];
  const lines = [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i >= 2 && i <= 5 ? '---:' : '---')).join('|')}|`,
    ...rows.map(
      (r) =>
        `| ${[r.fault, `${r.expectation}${r.required ? '' : ' (not required)'}`, r.requests, r.failed, r.p99Ms, r.maxMs, r.verdict].join(' | ')} |`,
    ),
  ];
  const notes = rows.filter((r) => r.notes.length).map((r) => `- ${r.fault}: ${r.notes.join('; ')}`);
  return [...lines, ...(notes.length ? ['', ...notes] : [])].join('\n');
}

/** 1 when a required expectation failed, else 0. */
export function exitCode(rows: Row[]): number {
  return rows.some((r) => r.verdict === 'FAIL') ? 1 : 0;
}

/** The samples of the main stream that started in [from, to). */
export function window(samples: Sample[], from: number, to: number, stream = 'main'): Sample[] {
  return samples.filter((s) => s.stream === stream && s.startedAt >= from && s.startedAt < to);
}

export const is2xx = (s: Sample) => s.status >= 200 && s.status < 300;
