// `npm run bench:export`: an organization's data leaving and being erased at scale, on the bench's stack (every
// service and the gateway as their own processes, real PostgreSQL, mutual TLS, tracing on). Organization 1 holds
// --users users and --drives reported drives; another organization of its own users, groups and drives runs steady
// /v1 load beside each piece of work measured, its quiet p99 taken before and after. Phase export: PostgreSQL's own
// COPY of the Drives part's query beside that load (the rate the part is held against) and on the quiet machine;
// organization 1's admin exports it through the public API (export-client.ts, in a process of its own) while every
// process's resident memory is sampled; COPY again, both ways; then the floor under its targets: the same rows read
// alone, in the export's pages, beside the load (copy-beside.ts), paced to the target's rate and unpaced, and a thread
// of the idle class computing alone for the Drives part's time (what that class itself costs the load); phase
// erasure: the operator's `npm run org -- offboard 1 --now` erases it. Both phases in one run by default: one seeding
// (the slow part) serves both, in the order a customer leaves (export, then erasure).
import { generateVolume, SERVICE_NAMES } from '@mileage/devstack';
import { EXPORT_PAGE_ROWS, EXPORT_REPORTED_DRIVES_SQL } from '@mileage/drives';
import { withIntegers } from '@mileage/runtime/database';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import { parseFlags } from './cli';
import { beginDrivesSnapshot, countCopyOut, type CopyOutResult } from './copy-out';
import {
  DRIVES_PHASE,
  EXPORT_TARGETS,
  erasureChecks,
  exportChecks,
  exportExitStatus,
  manifestRows,
  coresByPhase,
  p99ByPhase,
  phasesWithDownload,
  p99Ratio,
  perSecond,
  phaseSeconds,
  rssGrowth,
  type ExportClientResult,
} from './export-verdict';
import { measure, type LoadResult, type LoadSettings } from './load';
import { MemorySampler, readMemory } from './memory';
import { CpuMeter, privateMb, recentWarnings, runtimeNote } from './proc';
import { volumeUserId } from './seed';
import { startBenchStack, SCOPES, type BenchStack } from './stack';
import { enterOwnCpuGroup } from './cpu-group';
import type { Target } from './target';
import { failedRequests, summariseChecks } from './verdict';

const flags = parseFlags('npm run bench:export --', {
  /** export, erasure, or both (export first: the order in which a customer leaves). */
  phase: { type: 'string', default: 'both' },
  /** Organization 1's reported drives (each a drive reported to a group) and users. */
  drives: { type: 'string', default: '1000000' },
  users: { type: 'string', default: '100000' },
  /** The other organization, which runs /v1 load: its users (in groups of 100) and drives. */
  'other-users': { type: 'string', default: '1000' },
  'other-drives': { type: 'string', default: '100000' },
  /**
   * The other organization's load: connections, and seconds of its quiet run (after a warm-up). The quiet p99 is what
   * every p99 is held against: 30 s gives it about 90 requests beyond it (a 10 s run's, 30, varied 80–102 ms).
   */
  connections: { type: 'string', default: '8' },
  quiet: { type: 'string', default: '30' },
  warmup: { type: 'string', default: '2' },
  /** As `npm run bench`'s: the heap the chart's containers give (docs/benchmarks.md, resident memory). */
  'node-flags': { type: 'string', default: '--max-old-space-size=256 --max-semi-space-size=8' },
  /** CI's check that the bench runs: small sizes; the figures print, the targets do not fail it. */
  smoke: { type: 'boolean', default: false },
});
if (flags.smoke)
  Object.assign(flags, {
    drives: '20000',
    users: '2000',
    'other-users': '300',
    'other-drives': '20000',
    quiet: '3',
    warmup: '1',
    connections: '4',
  });
const num = (name: keyof typeof flags) => Number(flags[name]);
const PHASES = ['export', 'erasure', 'both'];
if (!PHASES.includes(flags.phase)) throw new Error(`--phase takes ${PHASES.join(', ')}`);
const runs = (phase: 'export' | 'erasure') => flags.phase === phase || flags.phase === 'both';

/** The organization exported and erased: the bench seeding's (organization 1). */
const MEASURED_ORGANIZATION = 1;
/** The other organization's volume users' ids start with W (organization 1's with V). */
const OTHER_PREFIX = 'W';
/** Callers of the other organization's load: this many group admins and as many drivers. */
const OTHER_CALLERS = 20;

const fmt = (n: number, digits = 0) => n.toFixed(digits);
const write = (line = '') => process.stdout.write(`${line}\n`);

interface OtherOrganization {
  id: number;
  /** Admins with their group, and drivers. */
  admins: { userId: string; groupId: number }[];
  drivers: string[];
}

/**
 * After the bench's seeding: organization 1's first user made its organization admin (who exports it), and the other
 * organization with its volume (generateVolume, ids W…). Answers the other organization's callers, who sign in.
 */
async function seedOther(admin: pg.Client, into: { other?: OtherOrganization }): Promise<string[]> {
  await admin.query(`UPDATE users.users SET organization_admin = true WHERE id = $1`, [volumeUserId(1)]);
  const { rows } = await admin.query<{ id: string }>(
    `INSERT INTO users.organizations (name, alias) VALUES ('Bench Other Organization', 'bench-other') RETURNING id`,
  );
  const id = Number(rows[0]!.id);
  await generateVolume(admin, {
    users: num('other-users'),
    drives: num('other-drives'),
    organization: { id, userPrefix: OTHER_PREFIX },
  });
  await admin.query('RESET ALL');
  await admin.query(
    'VACUUM (ANALYZE) users.users, groups.teams, groups.team_members, drives.drives, drives.drive_reports',
  );
  await admin.query('CHECKPOINT');
  const { rows: admins } = await admin.query<{ user_id: string; team_id: string }>(
    `SELECT m.user_id, m.team_id FROM groups.team_members m JOIN groups.teams t ON t.id = m.team_id
      WHERE t.organization_id = $1 AND m.is_admin ORDER BY m.team_id LIMIT $2`,
    [id, OTHER_CALLERS],
  );
  // The second member of each of those groups drives.
  const drivers = admins.map((a) => `${OTHER_PREFIX}${String(Number(a.user_id.slice(1)) + 1).padStart(9, '0')}`);
  into.other = { id, admins: admins.map((a) => ({ userId: a.user_id, groupId: Number(a.team_id) })), drivers };
  return [...admins.map((a) => a.user_id), ...drivers];
}

/** The other organization's /v1 load: a user, a group's reported drives and a driver's own drives, by their callers. */
function otherLoad(stack: BenchStack, other: OtherOrganization): Target {
  const as = (userId: string) => ({ authorization: `Bearer ${stack.tokens.get(userId)!}` });
  return {
    url: stack.gatewayUrl,
    requests: [
      ...other.admins.flatMap((a) => [
        { path: `/v1/users/${a.userId}`, headers: as(a.userId) },
        { path: `/v1/groups/${a.groupId}/reported-drives?limit=100`, headers: as(a.userId) },
      ]),
      ...other.drivers.map((d) => ({ path: `/v1/users/${d}/drives?limit=100`, headers: as(d) })),
    ],
  };
}

/** Every request of the load answers 200 before anything is measured. */
async function checkLoad(target: Target): Promise<void> {
  for (const r of target.requests) {
    const res = await fetch(`${target.url}${r.path}`, { headers: r.headers });
    if (res.status !== 200) throw new Error(`the other organization's ${r.path}: ${res.status} ${await res.text()}`);
  }
}

/**
 * PostgreSQL's own COPY of the Drives part's statement (all of the organization's rows in one statement rather than
 * the export's pages, without the review comments the part reads besides), as the Drives service runs its part: its
 * runtime role under row-level security, one REPEATABLE READ READ ONLY snapshot of the organization.
 */
async function copyDrivesPart(stack: BenchStack): Promise<CopyOutResult> {
  // The organization, and after drive id 0: every row.
  const query = withIntegers(EXPORT_REPORTED_DRIVES_SQL, [MEASURED_ORGANIZATION, 0, 0]);
  const client = new pg.Client({ connectionString: stack.runtimeUrls.drives, application_name: 'bench-copy' });
  await client.connect();
  try {
    await beginDrivesSnapshot(client, MEASURED_ORGANIZATION);
    const result = await countCopyOut(client, query);
    await client.query('COMMIT');
    return result;
  } finally {
    await client.end();
  }
}

/** One floor run of bench:export (copy-beside.ts) beside the other organization's load. */
interface FloorRun {
  pacedRowsPerSecond: number;
  /** How long the idle-class thread computed, nothing read (BENCH_SPIN_SECONDS). */
  spinSeconds?: number;
  rowsPerSecond: number;
  quietP99Ms: number;
  loaded: LoadResult;
  p99Ratio: number;
}

/** Runs a Node.js script to its end; its standard output, or a rejection with its standard error. */
function runScript(script: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve(out) : reject(new Error(`${path.basename(script)} exited with ${code ?? signal}: ${err}`)),
    );
  });
}

/**
 * The private memory (RssAnon) of each PostgreSQL process, sampled every second: each backend's growth from its
 * first reading to its highest, the largest by the service it serves.
 */
class BackendMemory {
  private readonly first = new Map<number, number>();
  private readonly peak = new Map<number, { name: string; mb: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pids: () => Map<number, string>) {
    this.sample();
    this.timer = setInterval(() => this.sample(), 1_000);
  }

  private sample(): void {
    for (const [pid, name] of this.pids()) {
      if (!name.startsWith('pg') && name !== 'postgres') continue;
      try {
        const mb = privateMb(pid);
        if (!this.first.has(pid)) this.first.set(pid, mb);
        if (mb > (this.peak.get(pid)?.mb ?? -1)) this.peak.set(pid, { name, mb });
      } catch {
        // The backend ended.
      }
    }
  }

  /** The largest growth (MB) of any process of each name. */
  stop(): Record<string, number> {
    this.sample();
    clearInterval(this.timer);
    const growth: Record<string, number> = {};
    for (const [pid, { name, mb }] of this.peak)
      growth[name] = Math.max(growth[name] ?? 0, Math.round((mb - this.first.get(pid)!) * 10) / 10);
    return growth;
  }
}

/** Of COPY's runs of the same rows, the fastest: the ceiling. */
const fastestCopy = (copies: CopyOutResult[]) =>
  copies.reduce((a, b) => (b.rows / b.seconds > a.rows / a.seconds ? b : a));

const windowSeconds = (x: LoadResult) => (x.window.toUs - x.window.fromUs) / 1e6;
const loadLine = (name: string, x: LoadResult) =>
  `  ${name.padEnd(34)} ${fmt(x.requestsPerSecond).padStart(6)} req/s  p50 ${fmt(x.p50Ms, 1).padStart(6)} ms  p99 ${fmt(x.p99Ms, 1).padStart(6)} ms  ${fmt(windowSeconds(x), 1)} s${failedRequests(x) ? `  FAILED ${failedRequests(x)} ${JSON.stringify(x.failures)}` : ''}`;

/** A load run's busy cores by process, from its CPU per request. */
const loadCores = (x: LoadResult) =>
  Object.fromEntries(
    Object.entries(x.cpuByProcess).map(([name, micros]) => [name, (micros * x.requests) / 1e6 / windowSeconds(x)]),
  );
const coresLine = (name: string, seconds: number, cores: Record<string, number>) =>
  `    ${name.padEnd(20)} ${fmt(seconds, 1).padStart(5)} s  ${Object.entries(cores)
    .filter(([, c]) => c >= 0.005)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([process, c]) => `${process} ${fmt(c, 2)}`)
    .join(', ')}`;

async function main(): Promise<number> {
  // Before the stack starts, so that its processes, PostgreSQL's backends included, are in it (cpu-group.ts says why).
  const cpuGroup = enterOwnCpuGroup('mileage-bench-export');
  try {
    return await measureInGroup(cpuGroup.note);
  } finally {
    cpuGroup.leave();
  }
}

async function measureInGroup(scheduling: string): Promise<number> {
  const started = Date.now();
  const seeded: { other?: OtherOrganization } = {};
  const stack = await startBenchStack({
    users: num('users'),
    drives: 0,
    callers: 1,
    walk: num('drives'),
    services: SERVICE_NAMES,
    exports: true,
    nodeFlags: flags['node-flags'].split(' ').filter(Boolean),
    moreAccounts: (admin) => seedOther(admin, seeded),
    log: write,
  });
  const workdir = mkdtempSync(path.join(tmpdir(), 'mileage-bench-export-'));
  let failures = 0;
  const checks: Record<string, boolean> = {};
  const results: Record<string, unknown> = {};
  try {
    const other = seeded.other!;
    const load = otherLoad(stack, other);
    await checkLoad(load);
    const settings = (extra: Partial<LoadSettings>): LoadSettings => ({
      connections: num('connections'),
      warmupSeconds: num('warmup'),
      durationSeconds: num('quiet'),
      afterWarmup: () => stack.refreshBackends(),
      ...extra,
    });
    /** The other organization's run while `work` runs (started once its warm-up is over), each response timed. */
    const beside = async <T>(work: () => Promise<T>) => {
      let running: Promise<T> | undefined;
      const responses: [number, number][] = [];
      const loaded = await measure(
        load,
        stack.fullPids,
        settings({
          warmupSeconds: 1,
          until: () => (running = work()),
          onResponse: (atMs, latencyMs) => responses.push([atMs, latencyMs]),
        }),
      );
      failures += failedRequests(loaded);
      return { loaded, responses, outcome: await running! };
    };
    /**
     * The other organization's quiet run before and after its run beside `work`: the quiet p99 that the loaded one is
     * held against is their mean, as the machine drifts within a run (docs/benchmarks.md, "An organization exported").
     */
    const alongside = async <T>(work: () => Promise<T>) => {
      const quiet = await measure(load, stack.fullPids, settings({}));
      const run = await beside(work);
      const quietAfter = await measure(load, stack.fullPids, settings({}));
      failures += failedRequests(quiet) + failedRequests(quietAfter);
      return { quiet, quietAfter, quietP99Ms: (quiet.p99Ms + quietAfter.p99Ms) / 2, ...run };
    };
    write(
      `\nOrganization ${MEASURED_ORGANIZATION}: ${num('users')} users, ${num('drives')} reported drives; the other ` +
        `organization (${other.id}): ${num('other-users')} users, ${num('other-drives')} drives, its /v1 load on ` +
        `${settings({}).connections} connections (${load.requests.length} requests: users, reported drives, a ` +
        `driver's drives). Every process on ${runtimeNote()}; ${scheduling}.`,
    );

    if (runs('export')) {
      // COPY before and after the export (the better of the two is the ceiling), the same rows in the same run: beside
      // the other organization's load, as the export runs (the target's), and on the quiet machine.
      const copiesQuiet = [await copyDrivesPart(stack)];
      const copyBeside = () => beside(() => copyDrivesPart(stack));
      const copiesBeside = [await copyBeside()];
      const nodeProcesses = Object.fromEntries(
        Object.entries(stack.processes).filter(([name]) => name === 'gateway' || SERVICE_NAMES.includes(name as never)),
      );
      const token = await stack.signIn(volumeUserId(1), `${SCOPES} organization_manage`);
      const archive = path.join(workdir, 'export.tar.gz');
      let before: Awaited<ReturnType<typeof readMemory>> | undefined;
      let sampler: MemorySampler | undefined;
      let cpuMeter: CpuMeter | undefined;
      let backends: BackendMemory | undefined;
      const { quiet, quietAfter, quietP99Ms, loaded, responses, outcome } = await alongside(async () => {
        // RSS from /proc alone: scraping every service's /metrics each second (the soak's heap readings, unused here)
        // is work of the bench's own, in every service at once, inside the export's window and in no quiet run.
        before = await readMemory(nodeProcesses, {});
        sampler = new MemorySampler(nodeProcesses, {}, 1);
        cpuMeter = new CpuMeter(stack.fullPids);
        backends = new BackendMemory(stack.fullPids);
        const out = await runScript(path.join(__dirname, 'export-client.js'), [], {
          BENCH_GATEWAY_URL: stack.gatewayUrl,
          BENCH_TOKEN: token,
          BENCH_ARCHIVE_FILE: archive,
        });
        return JSON.parse(out) as ExportClientResult;
      });
      const samples = await sampler!.stop();
      cpuMeter!.stop();
      const pgGrowth = backends!.stop();
      copiesBeside.push(await copyBeside());
      copiesQuiet.push(await copyDrivesPart(stack));
      const copies = copiesBeside.map((c) => c.outcome);
      const copy = fastestCopy(copies);
      const copyQuiet = fastestCopy(copiesQuiet);
      const drives = manifestRows(outcome.manifest, 'reported_drives.jsonl');
      if (drives !== num('drives') || copy.rows !== drives)
        throw new Error(`the archive holds ${drives} reported drives and COPY gave ${copy.rows}, not ${num('drives')}`);
      const peak: Record<string, number> = {};
      for (const s of samples)
        for (const [name, mb] of Object.entries(s.rssMb)) peak[name] = Math.max(peak[name] ?? 0, mb);
      const growth = rssGrowth(before!.rssMb, peak);
      const drivesSeconds = phaseSeconds(outcome.phases, DRIVES_PHASE);
      const drivesRate = perSecond(drives, drivesSeconds);
      const copyRate = perSecond(copy.rows, copy.seconds);
      const ratio = copyRate ? drivesRate / copyRate : 0;
      const copyQuietRate = perSecond(copyQuiet.rows, copyQuiet.seconds);
      const p99 = p99Ratio(quietP99Ms, loaded.p99Ms);
      const byPhase = p99ByPhase(responses, phasesWithDownload(outcome));
      const coresInPhases = coresByPhase(cpuMeter!.readings, phasesWithDownload(outcome));
      Object.assign(checks, exportChecks({ rssGrowthMb: growth, copyRatio: ratio, p99Ratio: p99 }));
      const allRows = outcome.manifest.files.reduce((sum, f) => sum + f.rows, 0);
      const phases = outcome.phases.map((p, i, all) => {
        const next = all[i + 1];
        return `${p.phase}${next ? ` ${fmt((next.wallMs - p.wallMs) / 1000, 1)} s` : ''}`;
      });
      write(
        [
          '',
          `Export of organization ${MEASURED_ORGANIZATION} (${drives} reported drives, ${manifestRows(outcome.manifest, 'users.jsonl')} users; ${allRows} lines in ${outcome.manifest.files.length} files, ${fmt(outcome.sizeBytes / 2 ** 20, 1)} MB gzipped):`,
          `  requested → ready ${fmt(outcome.readySeconds, 1)} s, → downloaded ${fmt(outcome.downloadedSeconds, 1)} s; phases as polled every 0.2 s: ${phases.join(', ')}`,
          ...(outcome.refusals.length
            ? [
                `  the export's own requests refused ${outcome.refusals.length} times: ${outcome.refusals.slice(0, 3).join('; ')}`,
              ]
            : []),
          `  the Drives part: ${drivesSeconds === undefined ? 'not seen (shorter than a poll)' : `${fmt(drivesSeconds, 1)} s, ${fmt(drivesRate)} reported drives/s (JSON Lines and CSV from one pass, with review comments, at the Drives service's EXPORT_DUTY_CYCLE)`}`,
          `  PostgreSQL's COPY of its statement (runtime role, one snapshot) beside the other organization's load: ${copies.map((c) => `${fmt(c.seconds, 2)} s`).join(' before, ')} after; best ${fmt(copyRate)} rows/s, ${fmt(copy.bytes / 2 ** 20, 1)} MB; the load's p99 meanwhile ${copiesBeside.map((c) => `${fmt(c.loaded.p99Ms)} ms`).join(', ')}`,
          `  export/COPY: ${fmt(ratio, 2)} (target ≥ ${EXPORT_TARGETS.copyRatio}); request to download, all ${drives} drives: ${fmt(perSecond(drives, outcome.downloadedSeconds))}/s, ${fmt(copyRate ? perSecond(drives, outcome.downloadedSeconds) / copyRate : 0, 2)}× COPY`,
          `  COPY on the quiet machine: ${copiesQuiet.map((c) => `${fmt(c.seconds, 2)} s`).join(' before, ')} after; best ${fmt(copyQuietRate)} rows/s; the export beside the load over it ${fmt(copyQuietRate ? drivesRate / copyQuietRate : 0, 2)}`,
          `  RSS growth MB (highest reading, every 1 s, less the one before; target ≤ ${EXPORT_TARGETS.rssGrowthMb}): ${Object.entries(
            growth,
          )
            .map(([name, mb]) => `${name} ${fmt(mb, 1)}`)
            .join(', ')}`,
          `  PostgreSQL private memory (RssAnon) growth MB, the largest backend of each: ${Object.entries(pgGrowth)
            .map(([name, mb]) => `${name} ${fmt(mb, 1)}`)
            .join(', ')}`,
          `  the other organization's /v1 load:`,
          loadLine('quiet before', quiet),
          loadLine('during the export', loaded),
          loadLine('quiet after', quietAfter),
          `  p99 during/quiet: ${fmt(p99, 2)} (target ≤ ${EXPORT_TARGETS.p99Ratio}); load average ${loadavg()
            .map((l) => fmt(l, 1))
            .join(' ')}`,
          `  its p99 in each phase (ms, × quiet): ${byPhase
            .map((p) => `${p.phase} ${fmt(p.p99Ms)} (${fmt(p99Ratio(quietP99Ms, p.p99Ms), 2)}×)`)
            .join(', ')}`,
          `  cores busy by process (PostgreSQL's backends by the service they serve; "postgres": its own processes and`,
          `  backends not yet named), quiet before and in each phase:`,
          coresLine('quiet before', windowSeconds(quiet), loadCores(quiet)),
          ...coresInPhases.map((p) => coresLine(p.phase, p.seconds, p.cores)),
        ].join('\n'),
      );
      results.export = {
        drives,
        users: manifestRows(outcome.manifest, 'users.jsonl'),
        phases: outcome.phases,
        readySeconds: outcome.readySeconds,
        downloadedSeconds: outcome.downloadedSeconds,
        sizeBytes: outcome.sizeBytes,
        refusals: outcome.refusals,
        manifestFiles: outcome.manifest.files.map(({ name, rows }) => ({ name, rows })),
        drivesPartSeconds: drivesSeconds,
        drivesPerSecond: drivesRate,
        copies,
        copyRowsPerSecond: copyRate,
        copyRatio: ratio,
        copiesBesideLoadP99Ms: copiesBeside.map((c) => c.loaded.p99Ms),
        copiesQuiet,
        copyQuietRowsPerSecond: copyQuietRate,
        copyQuietRatio: copyQuietRate ? drivesRate / copyQuietRate : 0,
        rssBeforeMb: before!.rssMb,
        rssPeakMb: peak,
        rssGrowthMb: growth,
        postgresPrivateGrowthMb: pgGrowth,
        quiet,
        quietAfter,
        loaded,
        p99Ratio: p99,
        p99ByPhase: byPhase,
        coresByPhase: coresInPhases,
      };

      // The floor under the export's two targets: the rows read alone, as the export reads them, beside the load; and
      // the idle class alone, a thread in it computing for as long as the Drives part ran, nothing read.
      const floors: FloorRun[] = [];
      const floorRuns = [
        { pacedRowsPerSecond: Math.round(EXPORT_TARGETS.copyRatio * copyRate), spinSeconds: 0 },
        { pacedRowsPerSecond: 0, spinSeconds: 0 },
        { pacedRowsPerSecond: 0, spinSeconds: Math.max(1, drivesSeconds ?? 0) },
      ];
      for (const { pacedRowsPerSecond, spinSeconds } of floorRuns) {
        const floor = await alongside(async () => {
          const out = await runScript(path.join(__dirname, 'copy-beside.js'), [], {
            BENCH_DATABASE_URL: stack.runtimeUrls.drives!,
            BENCH_ORGANIZATION: String(MEASURED_ORGANIZATION),
            BENCH_COPY_RATE: String(pacedRowsPerSecond),
            BENCH_SPIN_SECONDS: String(spinSeconds),
          });
          return JSON.parse(out) as CopyOutResult;
        });
        if (!spinSeconds && floor.outcome.rows !== drives)
          throw new Error(`COPY in pages gave ${floor.outcome.rows} rows, not ${drives}`);
        floors.push({
          pacedRowsPerSecond,
          ...(spinSeconds ? { spinSeconds: floor.outcome.seconds } : {}),
          rowsPerSecond: perSecond(floor.outcome.rows, floor.outcome.seconds),
          quietP99Ms: floor.quietP99Ms,
          loaded: floor.loaded,
          p99Ratio: p99Ratio(floor.quietP99Ms, floor.loaded.p99Ms),
        });
      }
      const p99Note = (f: FloorRun) =>
        `the other organization's p99 ${fmt(f.quietP99Ms)} → ${fmt(f.loaded.p99Ms)} ms, ${fmt(f.p99Ratio, 2)}×`;
      write(
        [
          `  PostgreSQL's COPY alone in the export's pages (${EXPORT_PAGE_ROWS} rows, a process in the idle class, nothing rendered) beside the load:`,
          ...floors.map((f) =>
            f.spinSeconds
              ? `    nothing read, the process computing in the idle class for ${fmt(f.spinSeconds, 1)} s (the Drives part's time): ${p99Note(f)}`
              : `    ${f.pacedRowsPerSecond ? `paced to ${fmt(f.pacedRowsPerSecond)} rows/s (${EXPORT_TARGETS.copyRatio}× COPY)` : 'unpaced'}: ${fmt(f.rowsPerSecond)} rows/s, ${fmt(f.rowsPerSecond / copyRate, 2)}× COPY; ${p99Note(f)}`,
          ),
        ].join('\n'),
      );
      results.copyBesideLoad = floors;
    }

    if (runs('erasure')) {
      // `npm run org`'s script, as an operator runs it (tools/devstack).
      const script = path.join(__dirname, '..', '..', 'devstack', 'dist', 'org.js');
      const { quiet, quietAfter, quietP99Ms, loaded } = await alongside(() =>
        runScript(script, ['offboard', String(MEASURED_ORGANIZATION), '--now'], stack.operatorEnv),
      );
      const [receipt] = await stack.sql<{ started: Date; finished: Date; erased: Record<string, number> }>(
        `SELECT erasure_started_at AS started, erasure_finished_at AS finished, erased_rows AS erased
           FROM users.organization_offboardings WHERE organization_id = $1`,
        [MEASURED_ORGANIZATION],
      );
      if (!receipt?.finished) throw new Error(`organization ${MEASURED_ORGANIZATION} has no finished erasure`);
      const [left] = await stack.sql<{ n: string }>(
        `SELECT count(*) AS n FROM drives.drives WHERE organization_id = $1`,
        [MEASURED_ORGANIZATION],
      );
      if (Number(left!.n) !== 0)
        throw new Error(
          `${left!.n} drives of the erased organization remain after its receipt (${JSON.stringify(receipt.erased)})`,
        );
      const rows = Object.values(receipt.erased).reduce((sum, n) => sum + n, 0);
      const seconds = (receipt.finished.getTime() - receipt.started.getTime()) / 1000;
      const p99 = p99Ratio(quietP99Ms, loaded.p99Ms);
      Object.assign(checks, erasureChecks({ p99Ratio: p99 }));
      const largest = Object.entries(receipt.erased)
        .sort(([, a], [, b]) => b - a)
        .slice(0, 4)
        .map(([table, n]) => `${table} ${n}`);
      write(
        [
          '',
          `Erasure of organization ${MEASURED_ORGANIZATION} (npm run org -- offboard ${MEASURED_ORGANIZATION} --now): ${rows} rows in ${fmt(seconds, 1)} s by its receipt, ${fmt(perSecond(rows, seconds))} rows/s (largest: ${largest.join(', ')})`,
          `  the other organization's /v1 load:`,
          loadLine('quiet before', quiet),
          loadLine('during the erasure', loaded),
          loadLine('quiet after', quietAfter),
          `  p99 during/quiet: ${fmt(p99, 2)} (target ≤ ${EXPORT_TARGETS.p99Ratio}); load average ${loadavg()
            .map((l) => fmt(l, 1))
            .join(' ')}`,
        ].join('\n'),
      );
      results.erasure = {
        rows,
        seconds,
        rowsPerSecond: perSecond(rows, seconds),
        erased: receipt.erased,
        quiet,
        quietAfter,
        loaded,
        p99Ratio: p99,
      };
    }

    const { line, missed } = summariseChecks(checks);
    write(`\n${line}${flags.smoke && missed.length ? ' (smoke: small sizes are noise, no target fails it)' : ''}`);
    write(`bench:export took ${fmt((Date.now() - started) / 1000)} s`);
    if (failures)
      process.stderr.write(
        `bench:export: ${failures} requests of the other organization failed\n` +
          `the servers' latest warnings and errors:\n${recentWarnings().join('\n') || '(none)'}\n`,
      );
    if (!flags.smoke) {
      const dir = path.join(__dirname, '..', 'results');
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        path.join(dir, 'export.json'),
        `${JSON.stringify({ date: new Date().toISOString(), node: process.version, scheduling, flags, results, checks, loadAverage: loadavg() }, null, 2)}\n`,
      );
    }
    return exportExitStatus(failures, missed.length, flags.smoke);
  } finally {
    rmSync(workdir, { recursive: true, force: true });
    await stack.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `bench:export failed: ${err instanceof Error ? err.stack : String(err)}\n` +
        `the servers' latest warnings and errors:\n${recentWarnings().join('\n') || '(none)'}\n`,
    );
    process.exit(1);
  },
);
