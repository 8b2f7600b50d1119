import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { isWarningOrWorse } from '@mileage/runtime/telemetry';

export interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
}

const children: Child[] = [];

/**
 * The Node.js every measured process runs on: this process's, which starts them all (the servers with its own
 * executable). Production runs the version .node-version names; the benches' npm scripts run on it
 * (tools/node-runtime.sh), `node tools/bench/dist/….js` on the Node.js that runs it.
 */
export function runtimeNote(): string {
  const production = readFileSync(path.join(__dirname, '..', '..', '..', '.node-version'), 'utf8').trim();
  const running = process.version.slice(1);
  return running === production
    ? `Node.js ${running} (the production runtime, .node-version)`
    : `Node.js ${running}, not the production runtime ${production} (.node-version; tools/node-runtime.sh)`;
}

/** How many of the latest warning, error and failed-request lines are kept, of all children together. */
const KEPT_WARNINGS = 30;
const warnings: string[] = [];

/** The children's latest warning, error and failed-request log lines (`name: line`), to say why requests failed. */
export function recentWarnings(): readonly string[] {
  return warnings;
}

/**
 * A Node.js child whose output is drained (as a container runtime would) but not shown, except its warning and
 * error lines and failed requests' access lines, of which the latest are kept (recentWarnings).
 */
export function startNode(name: string, script: string, env: Record<string, string>, nodeArgs: string[] = []): Child {
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    // Warnings, errors, and the access lines of requests that failed.
    if (!isWarningOrWorse(line) && !/"status":[45]\d\d,/.test(line)) return;
    warnings.push(`${name}: ${line.slice(0, 2_000)}`);
    if (warnings.length > KEPT_WARNINGS) warnings.shift();
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  child.on('exit', (code, signal) => {
    // A crash by a signal (an abort when the heap is full) has no code.
    if ((code || signal) && !stopping) process.stderr.write(`${name} exited with ${code ?? signal}\n${stderr}\n`);
  });
  const entry = { name, process: child, pid: child.pid! };
  children.push(entry);
  return entry;
}

let stopping = false;
export async function stopAll(): Promise<void> {
  stopping = true;
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.process.exitCode !== null || c.process.signalCode !== null) return resolve();
          c.process.once('exit', () => resolve());
          c.process.kill('SIGTERM');
          // Generous: a process run with --cpu-prof writes its profile on the way out.
          setTimeout(() => c.process.kill('SIGKILL'), 20_000).unref();
        }),
    ),
  );
}

/** Polls until `probe` answers true (no blind sleeps), failing after timeoutMs. */
export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} not ready after ${timeoutMs} ms`);
}

const CLK_TCK = Number(execSync('getconf CLK_TCK').toString().trim()) || 100;

/**
 * CPU seconds (user + system) a process has used so far, its own only; undefined when the process is gone.
 * Not its reaped children's: the postmaster's count of those is the whole life of every backend that ended — a bare
 * server's idle connections closing during the full path's run were counted against the full path that way.
 */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return undefined;
  }
}

/**
 * CPU used by a changing set of processes between start and stop, by name. Every process is sampled every 200 ms,
 * so one that ends during the run (a PostgreSQL backend) counts up to its last sample; one that starts counts from 0.
 * Each sample's totals so far are kept in `readings` (coresByPhase reads them), with the wall time they were taken at.
 */
export class CpuMeter {
  /** CPU seconds by process name since the meter started, at each sample. */
  readonly readings: CpuReading[] = [];
  private readonly first = new Map<number, number>();
  private readonly last = new Map<number, { name: string; cpu: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pids: () => Map<number, string>) {
    for (const [pid] of pids()) this.first.set(pid, cpuSeconds(pid) ?? 0);
    this.sample();
    this.timer = setInterval(() => this.sample(), 200);
  }

  private sample(): void {
    for (const [pid, name] of this.pids()) {
      const cpu = cpuSeconds(pid);
      if (cpu !== undefined) this.last.set(pid, { name, cpu });
    }
    const used: Record<string, number> = {};
    for (const [pid, { name, cpu }] of this.last) used[name] = (used[name] ?? 0) + cpu - (this.first.get(pid) ?? 0);
    this.readings.push({ atMs: Date.now(), used });
  }

  /** CPU seconds by process name since the meter started. */
  stop(): Record<string, number> {
    this.sample();
    clearInterval(this.timer);
    return this.readings.at(-1)!.used;
  }
}

/** A CpuMeter's sample: CPU seconds by process name since it started, at `atMs` (Date.now()). */
export interface CpuReading {
  atMs: number;
  used: Record<string, number>;
}

/** The whole machine's CPU time so far (/proc/stat's first line): seconds busy, and seconds in all, over every core. */
export function machineCpuSeconds(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already inside user and nice).
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
  const busy = user + nice + system + irq + softirq + steal;
  return { busy: busy / CLK_TCK, total: (busy + idle + iowait) / CLK_TCK };
}

export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/**
 * A process's private resident memory (MB, RssAnon): a PostgreSQL backend's own, without the pages of shared buffers
 * it has touched (which VmRSS counts in every backend that read them, though they are the server's one cache).
 */
export function privateMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/RssAnon:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** The postmaster serving dataDir and all its children (backends, workers). */
export function postgresPids(dataDir: string): number[] {
  const pids: number[] = [];
  let master: number | undefined;
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmd.includes('postgres') && cmd.includes(dataDir)) master = Number(entry);
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // The process ended while we looked.
    }
  }
  if (master === undefined) return pids;
  pids.push(master);
  for (const [pid, ppid] of parents) if (ppid === master) pids.push(pid);
  return pids;
}

export { freePort } from '@mileage/runtime/config';
