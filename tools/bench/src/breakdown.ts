// Where the time of one traced request goes, from its span tree (parent ids), and the medians over many requests.
// Pure: spans in, rows out.
//
// Each request's "parts" add up exactly to its client-measured total:
// - client ↔ gateway: the client's total minus the gateway's server span;
// - a span's own work: its duration minus the time its child spans cover;
// - a gRPC hop: the client span minus the callee's server span (the wire, TLS, HTTP/2, waiting for either event loop,
//   and the callee's work before its server span starts). Durations only across processes: each is measured on its
//   own process's clock, so no two processes' timestamps are ever subtracted;
// - a statement span, whole.
// Children one after another are subtracted by their durations. Children that overlap (calls sent at once) form one
// group on the critical path: the one that ended last is followed, the group's time before it began is a part of the
// parent's, and the others are listed beside, not added.
// The SDK takes a span's start from Date.now() (whole ms) and its end as start + a precise duration, so within a
// process starts are known to 1 ms only: children count as overlapping when they overlap by more than that.
import { SPAN_KIND, type SpanRecord } from './otlp-decode';

/** part: adds up to the total; span: a container (its parts are below it); beside: overlapped, not on the path. */
export type Role = 'part' | 'span' | 'beside';

export interface Row {
  /** Its place in the tree (the parent's key and its label), the same for the same call in every request. */
  key: string;
  parent: string;
  label: string;
  depth: number;
  ms: number;
  role: Role;
  /** Spans the row stands for (the same call made twice in a row is one row). */
  calls: number;
}

/** A trace the breakdown cannot account for (a span missing, or more than one root). */
export class IncompleteTrace extends Error {}

const duration = (s: SpanRecord) => s.endMs - s.startMs;
const isStatement = (s: SpanRecord) => s.kind === SPAN_KIND.client && 'db.system.name' in s.attributes;
const isCall = (s: SpanRecord) => s.kind === SPAN_KIND.client && 'rpc.system' in s.attributes;

/** The rows of one request: `spans` are its trace's, `clientMs` the total its client measured. */
export function breakdownTrace(spans: SpanRecord[], clientMs: number): Row[] {
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map<string, SpanRecord[]>();
  for (const s of spans)
    if (s.parentSpanId && ids.has(s.parentSpanId))
      children.set(s.parentSpanId, [...(children.get(s.parentSpanId) ?? []), s]);
  const roots = spans.filter((s) => !s.parentSpanId || !ids.has(s.parentSpanId));
  if (roots.length !== 1 || roots[0]!.kind !== SPAN_KIND.server)
    throw new IncompleteTrace(
      `expected one server span at the root, found ${roots.map((r) => r.name).join(', ') || 'none'}`,
    );
  const root = roots[0]!;
  const rows: Row[] = [];
  const add = (parent: string, label: string, depth: number, ms: number, role: Role) => {
    const key = `${parent}\u0000${label}`;
    rows.push({ key, parent, label, depth, ms, role, calls: 1 });
    return key;
  };

  const server = (s: SpanRecord, parent: string, depth: number) => {
    within(s, add(parent, `${s.service} server span ${s.name}`, depth, duration(s), 'span'), depth + 1);
  };

  const child = (c: SpanRecord, parent: string, depth: number) => {
    if (isStatement(c)) return void add(parent, `SQL ${c.name}`, depth, duration(c), 'part');
    if (!isCall(c)) return within(c, add(parent, `${c.service} ${c.name}`, depth, duration(c), 'span'), depth + 1);
    // A call retried by gRPC has one server span per attempt: the last is the one answered.
    const callee = (children.get(c.spanId) ?? [])
      .filter((k) => k.kind === SPAN_KIND.server)
      .reduce<SpanRecord | undefined>((a, b) => (a && a.startMs >= b.startMs ? a : b), undefined);
    if (!callee) throw new IncompleteTrace(`no server span below the client span ${c.name}`);
    const method = String(c.attributes['rpc.method'] ?? c.name);
    const key = add(parent, `${c.service} → ${callee.service} ${method}: client span`, depth, duration(c), 'span');
    add(
      key,
      `hop ${c.service} → ${callee.service}: client span − server span`,
      depth + 1,
      duration(c) - duration(callee),
      'part',
    );
    server(callee, key, depth + 1);
  };

  // Whole-ms starts (as the SDK records them) are only known to 1 ms; starts with a fraction are taken as exact.
  const resolutionMs = spans.every((x) => Number.isInteger(x.startMs)) ? 1 : 0;

  /** The parts inside a span of one process: its own work, and its children along the critical path. */
  const within = (s: SpanRecord, key: string, depth: number) => {
    const kids = [...(children.get(s.spanId) ?? [])].sort((a, b) => a.startMs - b.startMs);
    const groups: SpanRecord[][] = [];
    let groupEnd = -Infinity;
    for (const c of kids) {
      if (c.startMs < groupEnd - resolutionMs) {
        groups[groups.length - 1]!.push(c);
        groupEnd = Math.max(groupEnd, c.endMs);
      } else {
        groups.push([c]);
        groupEnd = c.endMs;
      }
    }
    let own = duration(s);
    let waiting = 0;
    const later: (() => void)[] = [];
    for (const g of groups) {
      const last = g.reduce((a, b) => (b.endMs > a.endMs ? b : a));
      // Calls at once: from the first one's start to the end of the last to end (at least that one's duration).
      const covered = Math.max(duration(last), last.endMs - Math.min(...g.map((c) => c.startMs)));
      own -= covered;
      waiting += covered - duration(last);
      const beside = g.filter((c) => c !== last);
      later.push(() => {
        child(last, key, depth);
        for (const c of beside) add(key, `∥ ${label(c)}`, depth, duration(c), 'beside');
      });
    }
    add(key, `${s.service} outside its child spans`, depth, own, 'part');
    if (waiting > 0) add(key, `${s.service} in calls at once, before the last to end began`, depth, waiting, 'part');
    for (const f of later) f();
  };

  const label = (c: SpanRecord) =>
    isStatement(c) ? `SQL ${c.name}` : `${c.service} ${String(c.attributes['rpc.method'] ?? c.name)}`;

  const top = add('', 'client total', 0, clientMs, 'span');
  add(top, 'client ↔ gateway: outside the gateway server span', 1, clientMs - duration(root), 'part');
  server(root, top, 1);
  return merge(rows);
}

/** Rows of the same key (the same call made twice in a row) summed into the first. */
function merge(rows: Row[]): Row[] {
  const byKey = new Map<string, Row>();
  for (const r of rows) {
    const seen = byKey.get(r.key);
    if (seen) {
      seen.ms += r.ms;
      seen.calls += r.calls;
    } else byKey.set(r.key, { ...r });
  }
  return [...byKey.values()];
}

export interface SummaryRow extends Omit<Row, 'ms'> {
  /** `calls` here: the most spans the row stood for in one request. */
  medianMs: number;
  meanMs: number;
  /** In how many of the requests the row occurs (it counts as 0 in the others). */
  present: number;
}

/** Each row's median and mean over the requests, in tree order (a row first seen late still sits under its parent). */
export function summarise(requests: Row[][]): SummaryRow[] {
  const first = new Map<string, Row>();
  const values = new Map<string, number[]>();
  const presence = new Map<string, number>();
  const calls = new Map<string, number>();
  requests.forEach((rows, i) => {
    for (const r of rows) {
      if (!first.has(r.key)) first.set(r.key, r);
      calls.set(r.key, Math.max(calls.get(r.key) ?? 0, r.calls));
      presence.set(r.key, (presence.get(r.key) ?? 0) + 1);
      const v = values.get(r.key) ?? Array<number>(requests.length).fill(0);
      v[i] = r.ms;
      values.set(r.key, v);
    }
  });
  const below = new Map<string, Row[]>();
  for (const r of first.values()) below.set(r.parent, [...(below.get(r.parent) ?? []), r]);
  const out: SummaryRow[] = [];
  const visit = (parent: string) => {
    for (const r of below.get(parent) ?? []) {
      const v = values.get(r.key)!;
      out.push({
        key: r.key,
        parent: r.parent,
        label: r.label,
        depth: r.depth,
        role: r.role,
        calls: calls.get(r.key)!,
        medianMs: median(v),
        meanMs: v.reduce((a, b) => a + b, 0) / v.length,
        present: presence.get(r.key)!,
      });
      visit(r.key);
    }
  };
  visit('');
  return out;
}

/** The p-th percentile (nearest rank) of the values. */
export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function median(values: number[]): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
