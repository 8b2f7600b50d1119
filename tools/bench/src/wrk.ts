// The second load generator: wrk (C, a process of its own; Debian's `wrk`), as the independent side-by-side of issue 24
// ran it. The same requests as autocannon's (wrk's one thread cycles through the target's paths and headers for all its
// connections, where each of autocannon's connections cycles through them); wrk's own CPU is read from the shell that
// waits for it (`times`), so that the generator's share of the cores is known. One gateway only (main.ts refuses more).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Target } from './target';

export interface WrkRun {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses with a status of 400 or more (wrk counts them without telling which), connection errors, timeouts. */
  failures: Record<string, number>;
  /** wrk's own user+system CPU. */
  cpuMicros: number;
}

/** Each thread reads the request file (a request per line: path, then headers, tab-separated) and cycles through it. */
const SCRIPT = `
local requests = {}
local next_request = 1
function init(args)
  for line in io.lines(args[1]) do
    local fields = {}
    for field in line:gmatch("[^\\t]+") do fields[#fields + 1] = field end
    local headers = {}
    for i = 2, #fields do
      local name, value = fields[i]:match("^([^:]+): (.*)$")
      headers[name] = value
    end
    requests[#requests + 1] = wrk.format("GET", fields[1], headers)
  end
end
function request()
  local r = requests[next_request]
  next_request = next_request % #requests + 1
  return r
end
function done(summary, latency)
  local e = summary.errors
  io.write(string.format(
    "WRK_RESULT {\\"requests\\":%d,\\"durationUs\\":%d,\\"p50Us\\":%d,\\"p99Us\\":%d,\\"status\\":%d,\\"connect\\":%d,\\"read\\":%d,\\"write\\":%d,\\"timeout\\":%d}\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
`;

/** The request file: a line per request, its path then `name: value` headers, tab-separated. */
export function requestLines(target: Pick<Target, 'requests'>): string {
  return target.requests
    .map((r) => {
      const fields = [r.path, ...Object.entries(r.headers ?? {}).map(([name, value]) => `${name}: ${value}`)];
      if (fields.some((f) => /[\t\n]/.test(f))) throw new Error(`a request wrk cannot carry: ${JSON.stringify(r)}`);
      return fields.join('\t');
    })
    .join('\n');
}

/** `times` in the shell after wrk: its second line is the children's user and system time ("0m1.23s 0m0.45s"). */
export function childrenCpuMicros(timesOutput: string): number {
  const lines = timesOutput.trim().split('\n');
  const match = /(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s/.exec(lines.at(-1) ?? '');
  if (!match) throw new Error(`cannot read wrk's CPU from: ${timesOutput}`);
  const [, um, us, sm, ss] = match;
  return Math.round((Number(um) * 60 + Number(us) + Number(sm) * 60 + Number(ss)) * 1e6);
}

export async function runWrk(target: Target, connections: number, durationSeconds: number): Promise<WrkRun> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-wrk-'));
  try {
    const script = path.join(dir, 'requests.lua');
    const file = path.join(dir, 'requests.txt');
    writeFileSync(script, SCRIPT);
    writeFileSync(file, requestLines(target));
    // One thread: two cores, shared with every server; wrk's epoll loop keeps 16 connections busy from one.
    const args = ['-t1', `-c${connections}`, `-d${durationSeconds}s`, '--timeout', '10s', '-s', script, target.url];
    const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number | null }>(
      (resolve, reject) => {
        const child = spawn('sh', ['-c', 'wrk "$@"; status=$?; times >&2; exit $status', 'sh', ...args, file]);
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
        child.once('error', reject);
        child.once('close', (exitCode) => resolve({ stdout: out, stderr: err, code: exitCode }));
      },
    );
    if (code === 127) throw new Error('wrk is not installed (Debian: apt-get install wrk)');
    const line = stdout.split('\n').find((l) => l.startsWith('WRK_RESULT '));
    if (code !== 0 || !line) throw new Error(`wrk failed (exit ${code}):\n${stdout}\n${stderr}`);
    const r = JSON.parse(line.slice('WRK_RESULT '.length)) as Record<string, number>;
    const failures: Record<string, number> = {};
    if (r.status) failures['status ≥ 400'] = r.status;
    const errors = r.connect! + r.read! + r.write!;
    if (errors) failures.errors = errors;
    if (r.timeout) failures.timeouts = r.timeout;
    return {
      requests: r.requests!,
      seconds: r.durationUs! / 1e6,
      p50Ms: r.p50Us! / 1000,
      p99Ms: r.p99Us! / 1000,
      failures,
      cpuMicros: childrenCpuMicros(stderr),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
