// `npm run bench`: every load-carrying /v1 route through the whole path (gateway → gRPC → services → PostgreSQL,
// real tokens, metrics and tracing on) against a bare node:http + pg server that runs the same statements and
// returns the same bytes, in one run on this machine; then the sync walk through next_cursor, a concurrency sweep
// (plotted into docs/benchmarks.svg) and, with --soak, resident memory after minutes of load.
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import * as path from 'node:path';
import { callsPerRequest, capacity, capacityLine, servedCounts, takingPart, type Capacity } from './capacity';
import { measure, type Generator, type LoadResult } from './load';
import type { Target } from './target';
import { insertScimToken, isolationProblem, seedOrganizations, spreadLookups } from './organizations';
import { MemorySampler, readMemory, summariseSoak, type MemorySample, type MemorySummary } from './memory';
import { oneConnection, type OneConnectionResult } from './one-connection';
import { renderMemoryPlot, renderPlot, type SweepPoint } from './plot';
import { piecesReport, type ProfiledRun } from './pieces';
import { cpuSeconds, recentWarnings, runtimeNote } from './proc';
import { BENCH_SERVICES, startBenchStack, type BenchStack } from './stack';
import * as verdict from './verdict';
import { deepCursor, walk, type WalkResult } from './walk';
import { parseFlags } from './cli';

const flags = parseFlags('npm run bench --', {
  duration: { type: 'string', default: '10' },
  warmup: { type: 'string', default: '2' },
  connections: { type: 'string', default: '16' },
  /**
   * The load generator: autocannon inside the bench's process, or wrk (Debian's `wrk`) in a process of its own, as
   * the independent side-by-side of issue 24 ran it (docs/benchmarks.md, "The two benches").
   */
  generator: { type: 'string', default: 'autocannon' },
  users: { type: 'string', default: '1000' },
  drives: { type: 'string', default: '200000' },
  callers: { type: 'string', default: '200' },
  walk: { type: 'string', default: '100000' },
  /** Stops each sync walk after this many pages (0: every page), to bound a walk at volume; a longer list is then
   * walked twice, its first pages and its last pages (from a cursor that many pages before its end). */
  'walk-pages': { type: 'string', default: '0' },
  /** Concurrency levels of the sweep (empty: no sweep) and seconds per level and target. */
  sweep: { type: 'string', default: '1,2,4,8,16,32,64' },
  'sweep-duration': { type: 'string', default: '3' },
  /** Seconds of mixed load on the full path before resident memory is read again (the issue's 300). */
  soak: { type: 'string', default: '0' },
  /** Seconds between two readings of every process's RSS and V8 heap during the soak. */
  'soak-interval': { type: 'string', default: '5' },
  /** Only the soak (with --soak): no per-route runs, walks or sweep before it. */
  'soak-only': { type: 'boolean', default: false },
  /** Routes to measure (ids below, comma-separated); all by default. */
  routes: { type: 'string', default: '' },
  /** Writes a V8 CPU profile of every full-path process into this folder (node --cpu-prof). */
  'cpu-prof': { type: 'string' },
  /**
   * Node.js / V8 flags for the gateway and the services, space-separated. By default the heap they have in the chart's
   * containers: Node sizes V8 from the cgroup memory limit (256Mi and 384Mi give V8's smallest old generation,
   * 256 MB), and the image sets NODE_OPTIONS=--max-semi-space-size=8 (deploy/docker/Dockerfile). Without them this
   * machine's 23 GB would give a 4 GB heap that grows 4× past its live size (docs/benchmarks.md, resident memory).
   */
  'node-flags': { type: 'string', default: '--max-old-space-size=256 --max-semi-space-size=8' },
  /**
   * Organizations of the SCIM lookup's second run (the issue's 100): the first runs as organization 1 alone, the
   * second after organizations 2…n are seeded with the same userNames, lookups spread over every organization's own
   * SCIM secret token. 1: no organization runs.
   */
  organizations: { type: 'string', default: '100' },
  /** The services' runtime roles bypass row-level security: run once with and once without to price the policies. */
  'bypass-rls': { type: 'boolean', default: false },
  /**
   * The hop in plaintext (GRPC_PLAINTEXT) instead of mutual TLS with end-user contexts, as installed: run once with
   * and once without to price them. A development comparison only; every process logs that it is plaintext.
   */
  plaintext: { type: 'boolean', default: false },
  /**
   * Gateway processes of the full path (the chart runs two replicas of each component): the load's connections are
   * spread over them. One by default, as every figure in docs/benchmarks.md was measured.
   */
  gateways: { type: 'string', default: '1' },
  /**
   * Before the load runs: each route's requests one at a time on one keep-alive connection, bare server and full
   * path, then a traced pass that breaks the full path's time down by span (one-connection.ts).
   */
  'one-connection': { type: 'boolean', default: false },
  /** Requests per target in that mode (and in its traced pass). */
  'one-connection-requests': { type: 'string', default: '2000' },
  strict: { type: 'boolean', default: false },
  /** CI's check that the bench runs: seconds per target, small volume; fails on any non-200 or differing body. */
  smoke: { type: 'boolean', default: false },
});
if (flags.smoke)
  Object.assign(flags, {
    duration: '2',
    warmup: '1',
    connections: '8',
    users: '200',
    drives: '20000',
    callers: '20',
    walk: '2000',
    'walk-pages': '5',
    organizations: '4',
    sweep: '',
    'one-connection': true,
    'one-connection-requests': '100',
  });
const num = (name: keyof typeof flags) => Number(flags[name]);
if (!Number.isInteger(num('gateways')) || num('gateways') < 1) throw new Error('--gateways takes a whole number ≥ 1');
const GENERATORS: readonly Generator[] = ['autocannon', 'wrk'];
const generator = flags.generator as Generator;
if (!GENERATORS.includes(generator)) throw new Error(`--generator takes ${GENERATORS.join(' or ')}`);
if (generator === 'wrk' && num('gateways') > 1) throw new Error('--generator wrk loads one gateway: use --gateways 1');
// The pieces report divides one gateway's profile by every request the full path served.
if (num('gateways') > 1 && flags['cpu-prof']) throw new Error('--cpu-prof profiles one gateway: use --gateways 1');

interface RouteDef {
  id: string;
  title: string;
  /** Which CPU target applies (verdict.TARGETS.cpuRatio). */
  kind: verdict.RouteKind;
  full: Target;
  bare: Target;
  /** The architecture's floor (floor-server.ts), for the routes it answers. */
  floor?: Target;
}

function routes(stack: BenchStack): RouteDef[] {
  const { data, tokens } = stack;
  const callers = data.callers;
  const both = (make: (i: number) => { path: string; caller: string }, count: number) => {
    const reqs = Array.from({ length: count }, (_, i) => make(i));
    return {
      full: {
        url: stack.gatewayUrl,
        replicas: stack.gatewayReplicas,
        requests: reqs.map((r) => ({ path: r.path, headers: { authorization: `Bearer ${tokens.get(r.caller)!}` } })),
      },
      bare: { url: stack.bareUrl, requests: reqs.map((r) => ({ path: r.path, headers: { 'x-user-id': r.caller } })) },
    };
  };
  // The floor answers the bare server's requests (the caller is the path's user, or its x-user-id header).
  const withFloor = (targets: { full: Target; bare: Target }) => ({
    ...targets,
    floor: { url: stack.floorUrl, requests: targets.bare.requests },
  });
  const groups = data.adminGroups;
  // SCIM: the provisioning client's token on the full path; the bare server checks no token.
  const scim = (paths: string[]) => ({
    full: {
      url: stack.gatewayUrl,
      replicas: stack.gatewayReplicas,
      requests: paths.map((p) => ({ path: p, headers: { authorization: `Bearer ${stack.scimToken}` } })),
    },
    bare: { url: stack.bareUrl, requests: paths.map((p) => ({ path: p })) },
    floor: { url: stack.floorUrl, requests: paths.map((p) => ({ path: p })) },
  });
  const all: RouteDef[] = [
    {
      id: 'user',
      title: 'GET /v1/users/{id}',
      kind: 'route',
      ...withFloor(both((i) => ({ path: `/v1/users/${callers[i]}`, caller: callers[i]! }), callers.length)),
    },
    {
      id: 'user-drives',
      title: 'GET /v1/users/{id}/drives?limit=100',
      kind: 'page',
      ...withFloor(
        both((i) => ({ path: `/v1/users/${callers[i]}/drives?limit=100`, caller: callers[i]! }), callers.length),
      ),
    },
    {
      id: 'reported-drives',
      title: 'GET /v1/groups/{id}/reported-drives?limit=100',
      kind: 'page',
      ...withFloor(
        both(
          (i) => ({ path: `/v1/groups/${groups[i]!.groupId}/reported-drives?limit=100`, caller: groups[i]!.adminId }),
          groups.length,
        ),
      ),
    },
    {
      // The lookup an identity provider sends before every change it provisions, spread over every volume user.
      id: 'scim-lookup',
      title: 'GET /scim/v2/Users?filter=userName eq "…"',
      kind: 'scim',
      ...scim(data.userNames.map((u) => `/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${u}"`)}`)),
    },
    {
      // The first page of the sync team: at volume (--walk 1000000), a page of a team with that many reports.
      id: 'sync-team-page',
      title: `GET /v1/groups/{id}/reported-drives?limit=100 (team of ${data.walkGroup.reported} reports)`,
      kind: 'page',
      ...withFloor(
        both(
          () => ({
            path: `/v1/groups/${data.walkGroup.groupId}/reported-drives?limit=100`,
            caller: data.walkGroup.adminId,
          }),
          1,
        ),
      ),
    },
  ];
  return all.filter((r) => !flags.routes || flags.routes.split(',').includes(r.id));
}

/**
 * Asserts, for a sample of the requests, that every target answers 200 with the same bytes: the bare server is a
 * fair ceiling, and the floor a fair floor, only while each returns exactly what the full path returns.
 */
async function assertSameBodies(route: RouteDef, sample = 20): Promise<void> {
  const { full, bare, floor } = route;
  const step = Math.max(1, Math.floor(full.requests.length / sample));
  for (let i = 0; i < full.requests.length; i += step) {
    const [f, b, fl] = await Promise.all(
      [full, bare, ...(floor ? [floor] : [])].map((t) =>
        fetch(`${t.url}${t.requests[i]!.path}`, { headers: t.requests[i]!.headers }),
      ),
    );
    const [fb, bb, flb] = await Promise.all([f!, b!, ...(fl ? [fl] : [])].map((r) => r.text()));
    for (const [name, res, body] of [
      ['bare server', b!, bb!],
      ...(fl ? [['floor', fl, flb!] as const] : []),
    ] as const) {
      const differ = verdict.answersDiffer({ status: f!.status, body: fb! }, { status: res.status, body });
      if (differ) throw new Error(`${route.title} ${full.requests[i]!.path}, full path against the ${name}: ${differ}`);
    }
  }
}

const fmt = (n: number, digits = 0) => n.toFixed(digits);

/**
 * Where the cores went in a route's two runs: the machine's busy cores of all, and the bench process's share (the
 * load generator, which competes with the servers for the same cores: one reason two benches disagree).
 */
function coresLine(bare: LoadResult, full: LoadResult): string {
  const part = (x: LoadResult) =>
    `machine ${fmt(x.cores.machineBusy, 2)}, load generator ${fmt(x.cores.generator, 2)} (${fmt(x.cores.generatorMicrosPerRequest)} µs/request)`;
  return `  cores busy of ${fmt(full.cores.machine, 1)}: bare: ${part(bare)}; full path: ${part(full)}`;
}

/**
 * The floor's place between the two: what the hop alone costs against the bare server (no gateway can do better),
 * and what the gateway's own stack costs on top of it.
 */
function floorLines(bare: LoadResult, floor: LoadResult, full: LoadResult): string[] {
  const [hop, stack] = [verdict.ratios(bare, floor), verdict.ratios(floor, full)];
  const part = (x: ReturnType<typeof verdict.ratios>) =>
    `throughput ${fmt(x.throughput, 2)}, p99 ${fmt(x.p99, 2)}, CPU ${fmt(x.cpu, 2)}`;
  return [`  floor/bare (the hop): ${part(hop)}; full/floor (the gateway's stack): ${part(stack)}`];
}

/** The processes of the full path that `--cpu-prof` profiles, as stack.ts names their profiles. */
const PROFILED_PROCESSES = ['gateway', ...BENCH_SERVICES];

/** The bench, then (with --cpu-prof) where each process's CPU went in each route's run, once the profiles are written. */
async function main(): Promise<number> {
  const profiled: ProfiledRun[] = [];
  const status = await runBench(profiled);
  const dir = flags['cpu-prof'];
  if (dir && profiled.length)
    process.stdout.write(`${piecesReport(path.resolve(dir), PROFILED_PROCESSES, profiled).join('\n')}\n`);
  return status;
}

async function runBench(profiled: ProfiledRun[]): Promise<number> {
  const stack = await startBenchStack({
    users: num('users'),
    drives: num('drives'),
    callers: num('callers'),
    walk: num('walk'),
    ...(flags['cpu-prof'] ? { cpuProfDir: path.resolve(flags['cpu-prof']) } : {}),
    nodeFlags: flags['node-flags'].split(' ').filter(Boolean),
    bypassRls: flags['bypass-rls'],
    plaintext: flags.plaintext,
    gateways: num('gateways'),
    log: (msg) => process.stdout.write(`${msg}\n`),
  });
  let failures = 0;
  try {
    const defs = routes(stack);
    for (const r of defs) await assertSameBodies(r);
    const idleRss = stack.rss();
    const idleMemory = await readMemory(stack.processes, stack.metricsUrls);
    // CPU the processes use with no load at all (timers, metrics, PostgreSQL's background workers): it is part of
    // every CPU-per-request figure below, the more so the fewer requests a run completes.
    const idlePids = new Map([...stack.fullPids(), ...stack.barePids()]);
    const idleBefore = new Map([...idlePids.keys()].map((pid) => [pid, cpuSeconds(pid) ?? 0]));
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const idleCpu: Record<string, number> = {};
    for (const [pid, name] of idlePids)
      idleCpu[name] = (idleCpu[name] ?? 0) + ((cpuSeconds(pid) ?? 0) - idleBefore.get(pid)!) / 3;
    process.stdout.write(
      `Idle CPU ms/s: ${Object.entries(idleCpu)
        .map(([k, v]) => `${k} ${fmt(v * 1000, 1)}`)
        .join(', ')}\n`,
    );
    const checks: Record<string, boolean> = {};
    let oneConnectionResults: Record<string, OneConnectionResult> | undefined;
    if (flags['one-connection'] && !flags['soak-only']) {
      const write = (text: string) => void process.stdout.write(text);
      const one = await oneConnection(defs, {
        requests: num('one-connection-requests'),
        sinkUrl: stack.sinkUrl,
        write,
      });
      oneConnectionResults = one.results;
      failures += one.failures;
      Object.assign(checks, one.checks);
    }
    const settings = {
      durationSeconds: num('duration'),
      warmupSeconds: num('warmup'),
      connections: num('connections'),
      generator,
      afterWarmup: () => stack.refreshBackends(),
    };
    process.stdout.write(
      `\nLoad: ${generator === 'wrk' ? 'wrk in its own process' : 'autocannon in the bench process'}, ${settings.connections} connections${num('gateways') > 1 ? ` (the full path's spread over ${num('gateways')} gateways)` : ''}, ${settings.warmupSeconds} s warm-up + ` +
        `${settings.durationSeconds} s measured per target; bare, full path and (where it answers) the floor in turn. ` +
        `CPU: user+system of every server-side process (PostgreSQL: every backend, named by the service it serves) ` +
        `per request. Every process on ${runtimeNote()}.\n`,
    );
    const results: Record<
      string,
      { bare: LoadResult; full: LoadResult; floor?: LoadResult; callsPerRequest?: Record<string, number> }
    > = {};
    const lines: string[] = [
      `  ${'route / target'.padEnd(48)} ${'req/s'.padStart(7)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'CPU µs/req'.padStart(10)}  CPU µs/req by process`,
    ];
    process.stdout.write(`${lines[0]}\n`);
    const capacities: Record<string, Capacity> = {};
    for (const r of flags['soak-only'] ? [] : defs) {
      const bare = await measure(r.bare, stack.barePids, settings);
      // Which processes serve the route: those whose count of served requests grows during its run.
      const served = await servedCounts(stack.metricsUrls);
      const full = await measure(r.full, stack.fullPids, settings);
      const servedAfter = await servedCounts(stack.metricsUrls);
      const components = takingPart(served, servedAfter);
      const calls = callsPerRequest(served, servedAfter);
      // After the full path, so that the full path runs right after the bare server as in every run before the floor.
      const floor = r.floor ? await measure(r.floor, stack.floorPids, settings) : undefined;
      capacities[r.id] = capacity(full, idleCpu, components);
      profiled.push({ title: r.title, requests: full.requests, window: full.window });
      results[r.id] = { bare, full, ...(floor && { floor }), ...(calls && { callsPerRequest: calls }) };
      failures +=
        verdict.failedRequests(bare) + verdict.failedRequests(full) + (floor ? verdict.failedRequests(floor) : 0);
      const row = (name: string, x: LoadResult) =>
        `  ${name.padEnd(48)} ${fmt(x.requestsPerSecond).padStart(7)} ${fmt(x.p50Ms, 1).padStart(7)} ${fmt(x.p99Ms, 1).padStart(7)} ${fmt(x.cpuMicrosPerRequest).padStart(10)}  ${JSON.stringify(x.cpuByProcess)}${verdict.failedRequests(x) ? `  ERRORS ${verdict.failedRequests(x)} ${JSON.stringify(x.failures)}` : ''}`;
      const ratio = verdict.ratios(bare, full);
      Object.assign(checks, verdict.routeChecks(r.id, r.kind, ratio));
      const text = [
        r.title,
        row('bare node:http + pg', bare),
        ...(floor ? [row('floor: node:http + the hop, no gateway stack', floor)] : []),
        row('full path', full),
        `  full/bare: throughput ${fmt(ratio.throughput, 2)} (≥ ${verdict.TARGETS.throughputRatio}), p99 ${fmt(ratio.p99, 2)} (≤ ${verdict.TARGETS.p99Ratio}), CPU ${fmt(ratio.cpu, 2)} (≤ ${verdict.TARGETS.cpuRatio[r.kind]})`,
        ...(floor ? floorLines(bare, floor, full) : []),
        capacityLine(capacities[r.id]!),
        ...(calls
          ? [
              `  gRPC calls served per request: ${Object.entries(calls)
                .map(([name, n]) => `${name} ${fmt(n, 2)}`)
                .join(', ')}`,
            ]
          : []),
        coresLine(bare, full),
        '',
      ];
      lines.push(...text);
      process.stdout.write(`${text.join('\n')}\n`);
    }

    // The SCIM lookup with many organizations: organization 1 alone, then among `organizations`, each with its own
    // secret token; the second run's figures against the first's.
    const organizationCount = num('organizations');
    if (organizationCount > 1 && !flags['soak-only'] && defs.some((d) => d.id === 'scim-lookup')) {
      const alone = { tokens: [await insertScimToken(stack.sql, 1)], userNames: stack.data.userNames };
      const single = await measure({ url: stack.gatewayUrl, requests: spreadLookups(alone) }, stack.fullPids, settings);
      const started = Date.now();
      const many = await seedOrganizations(stack.sql, organizationCount);
      const seeded = `${organizationCount} organizations × ${many.userNames.length} users seeded in ${fmt((Date.now() - started) / 1000, 1)} s`;
      const problem = await isolationProblem(stack.gatewayUrl, many);
      if (problem) throw new Error(`SCIM lookups across organizations: ${problem}`);
      const spread = await measure({ url: stack.gatewayUrl, requests: spreadLookups(many) }, stack.fullPids, settings);
      failures += verdict.failedRequests(single) + verdict.failedRequests(spread);
      results['scim-lookup-organizations'] = { bare: single, full: spread };
      const ratio = verdict.ratios(single, spread);
      Object.assign(checks, verdict.organizationChecks(ratio));
      const row = (name: string, x: LoadResult) =>
        `  ${name.padEnd(48)} ${fmt(x.requestsPerSecond).padStart(7)} ${fmt(x.p50Ms, 1).padStart(7)} ${fmt(x.p99Ms, 1).padStart(7)} ${fmt(x.cpuMicrosPerRequest).padStart(10)}  ${JSON.stringify(x.cpuByProcess)}`;
      const hold = verdict.TARGETS.organizationsHold;
      const text = [
        `GET /scim/v2/Users?filter=userName eq "…" with SCIM secret tokens (${seeded})`,
        row('organization 1 alone', single),
        row(`${organizationCount} organizations, each its own token`, spread),
        `  many/one: throughput ${fmt(ratio.throughput, 2)} (≥ ${hold}), p99 ${fmt(ratio.p99, 2)} (≤ ${fmt(1 / hold, 2)}), CPU ${fmt(ratio.cpu, 2)} (≤ ${fmt(1 / hold, 2)})`,
        '',
      ];
      lines.push(...text);
      process.stdout.write(`${text.join('\n')}\n`);
    }

    // The sync walk: every page of the sync team's reported drives through next_cursor, one request at a time.
    const walks: Record<string, { bare: WalkResult; full: WalkResult; floor: WalkResult }> = {};
    // With --walk-pages, a long list is walked twice: its first pages, and (after every other walk) its last pages from
    // a cursor deep in it. A walk that fails is reported and counted, and the others still run.
    const maxPages = num('walk-pages');
    const long = (limit: number) => maxPages > 0 && stack.data.walkGroup.reported > 2 * maxPages * limit;
    const plan = flags['soak-only']
      ? []
      : [
          ...[100, 1000].map((limit) => ({ limit, part: long(limit) ? 'first' : '' })),
          ...[100, 1000].filter(long).map((limit) => ({ limit, part: 'last' })),
        ];
    for (const { limit, part } of plan) {
      const name = `${limit}${part ? ` ${part}` : ''}`;
      const wrow = (label: string, w: WalkResult) =>
        `  ${label.padEnd(22)} ${fmt(w.seconds, 2).padStart(7)} s ${fmt(w.drivesPerSecond).padStart(8)} drives/s ${String(w.pages).padStart(5)} pages  CPU µs per drive ${JSON.stringify(w.cpuMicrosPerDriveByProcess)}`;
      const heading = `Sync walk: pages of ${limit} through next_cursor${part ? `, the ${part} ${maxPages} pages of ${stack.data.walkGroup.reported}` : ''} (target ≥ ${verdict.TARGETS.walkDrivesPerSecond} drives/s)`;
      const text = [heading];
      try {
        const from = part === 'last' ? await deepCursor(stack, limit, maxPages) : undefined;
        const bare = await walk(stack, 'bare', limit, maxPages, from);
        text.push(wrow('bare node:http + pg', bare));
        const full = await walk(stack, 'full', limit, maxPages, from);
        text.push(wrow('full path', full));
        // The floor walks too (the same pages through the gateway's calls, no gateway stack): what the hop costs a sync.
        const floor = await walk(stack, 'floor', limit, maxPages, from);
        text.push(wrow('floor: hop, no stack', floor));
        const expected = verdict.expectedWalkDrives({
          last: part === 'last',
          maxPages,
          limit,
          pages: full.pages,
          reported: stack.data.walkGroup.reported,
        });
        const problem = verdict.walkProblem(bare, full, expected, floor);
        if (problem) throw new Error(problem);
        walks[name] = { bare, full, floor };
        checks[`sync walk limit ${name}`] = full.drivesPerSecond >= verdict.TARGETS.walkDrivesPerSecond;
      } catch (err) {
        failures++;
        checks[`sync walk limit ${name}`] = false;
        text.push(`  FAILED: ${err instanceof Error ? err.message : String(err)}`);
      }
      text.push('');
      lines.push(...text);
      process.stdout.write(`${text.join('\n')}\n`);
    }

    // Throughput and p99 against concurrency, for the plot.
    const sweep: SweepPoint[] = [];
    const levels = flags.sweep && !flags['soak-only'] ? flags.sweep.split(',').map(Number) : [];
    for (const r of levels.length ? defs.filter((d) => d.id !== 'sync-team-page') : []) {
      for (const connections of levels) {
        const s = { connections, warmupSeconds: 1, durationSeconds: num('sweep-duration'), generator };
        for (const [target, t, pids] of [
          ['bare', r.bare, stack.barePids],
          ['full', r.full, stack.fullPids],
        ] as const) {
          const x = await measure(t, pids, s);
          failures += verdict.failedRequests(x);
          sweep.push({ route: r.title, target, connections, requestsPerSecond: x.requestsPerSecond, p99Ms: x.p99Ms });
          process.stdout.write(
            `  sweep ${r.id} ${target} c=${connections}: ${fmt(x.requestsPerSecond)} req/s, p99 ${x.p99Ms} ms\n`,
          );
        }
      }
    }

    // Resident memory: idle (before any load), after the runs above, and after the soak if asked for.
    const soakSeconds = num('soak');
    let soak: { samples: MemorySample[]; summary: MemorySummary; loadAverage: number[] } | undefined;
    if (soakSeconds > 0) {
      const mixed: Target = { url: stack.gatewayUrl, requests: defs.flatMap((r) => r.full.requests) };
      process.stdout.write(`\nSoak: ${soakSeconds} s of every route mixed, ${settings.connections} connections…\n`);
      const sampler = new MemorySampler(stack.processes, stack.metricsUrls, num('soak-interval'));
      const x = await measure(mixed, stack.fullPids, { ...settings, warmupSeconds: 1, durationSeconds: soakSeconds });
      const samples = await sampler.stop();
      failures += verdict.failedRequests(x);
      soak = { samples, summary: summariseSoak(idleMemory, samples, sampler.intervalSeconds), loadAverage: loadavg() };
      lines.push(
        `Soak: ${soakSeconds} s mixed, ${fmt(x.requestsPerSecond)} req/s, p99 ${x.p99Ms} ms, CPU µs/req ${fmt(x.cpuMicrosPerRequest)} ${JSON.stringify(x.cpuByProcess)}; load average ${soak.loadAverage.map((l) => fmt(l, 1)).join(' ')}`,
        `  ${'MB (every ' + sampler.intervalSeconds + ' s)'.padEnd(24)} ${'idle'.padStart(6)} ${'peak'.padStart(6)} ${'end'.padStart(6)} ${'end/idle'.padStart(8)}  2nd half MB/min  lowest of each minute`,
      );
      const table: string[] = [];
      for (const [kind, series] of [
        ['RSS', soak.summary.rss],
        ['heap used', soak.summary.heap],
        ['heap committed', soak.summary.heapTotal],
      ] as const)
        for (const [name, m] of Object.entries(series))
          table.push(
            `  ${(kind + ' ' + name).padEnd(24)} ${fmt(m.idle).padStart(6)} ${fmt(m.peak).padStart(6)} ${fmt(m.end).padStart(6)} ${fmt(m.growth, 2).padStart(8)}  ${fmt(m.secondHalfMbPerMinute, 2).padStart(15)}  ${m.minuteFloors.map((v) => fmt(v)).join(' ')}`,
          );
      table.push(
        `  GC pauses during the soak, ms per request (wall time, so inflated on a loaded machine): ${Object.entries(
          soak.summary.gcSeconds,
        )
          .map(([name, s]) => `${name} ${fmt((1000 * s) / Math.max(x.requests, 1), 2)}`)
          .join(', ')}`,
      );
      lines.push(...table);
      process.stdout.write(`${lines.slice(-(2 + table.length)).join('\n')}\n`);
    }
    const afterRss = stack.rss();
    const rssLine = Object.keys(idleRss)
      .map((k) => `${k} ${fmt(idleRss[k]!)} → ${fmt(afterRss[k]!)}`)
      .join(', ');
    if (soakSeconds >= 300) checks['rss after soak'] = verdict.rssWithinTarget(idleRss, afterRss);
    lines.push(`RSS MB idle → after${soakSeconds ? ` ${soakSeconds} s soak` : ''}: ${rssLine}`);
    process.stdout.write(`\n${lines.slice(-1)[0]}\n`);
    const { line: targetsLine, missed } = verdict.summariseChecks(checks);
    process.stdout.write(`\n${targetsLine}\n`);

    if (!flags.smoke) {
      const date = new Date().toISOString();
      const resultsDir = path.join(__dirname, '..', 'results');
      mkdirSync(resultsDir, { recursive: true });
      const report = {
        date,
        node: process.version,
        settings,
        flags,
        idleCpu,
        results,
        capacity: capacities,
        oneConnection: oneConnectionResults,
        walks,
        sweep,
        idleRss,
        afterRss,
        soakSeconds,
        soak,
        checks,
      };
      writeFileSync(
        path.join(resultsDir, flags['soak-only'] ? 'soak.json' : 'latest.json'),
        JSON.stringify(report, (k, v: unknown) => (k === 'pageHashes' ? undefined : v), 2) + '\n',
      );
      if (soak && soakSeconds >= 60) {
        const file = path.join(__dirname, '..', '..', '..', 'docs', 'benchmarks-soak.svg');
        writeFileSync(
          file,
          renderMemoryPlot(
            soak.samples,
            idleMemory,
            `npm run bench -- --soak ${soakSeconds}, ${date.slice(0, 10)}, 2-core machine, load average ${soak.loadAverage.map((l) => fmt(l, 1)).join(' ')}`,
          ),
        );
        process.stdout.write(`Memory plot: ${path.relative(process.cwd(), file)}\n`);
      }
      if (sweep.length) {
        const file = path.join(__dirname, '..', '..', '..', 'docs', 'benchmarks.svg');
        writeFileSync(file, renderPlot(sweep, `npm run bench, ${date.slice(0, 10)}, 2-core machine`));
        process.stdout.write(`Plot: ${path.relative(process.cwd(), file)}\n`);
      }
    }
    if (failures)
      process.stderr.write(
        `bench: ${failures} requests answered something other than 200\n` +
          `the servers' latest warnings and errors:\n${recentWarnings().join('\n') || '(none)'}\n`,
      );
    return verdict.exitStatus(failures, missed.length, flags.strict);
  } finally {
    await stack.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
