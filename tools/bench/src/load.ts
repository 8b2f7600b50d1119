import autocannon from 'autocannon';
import { cpuSeconds } from './proc';

export interface LoadSettings {
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
  cpuMicrosPerRequest: number;
  /** CPU µs per request of each server-side process, by the name `serverPids` gave it. */
  cpuByProcess: Record<string, number>;
}

export interface Target {
  url: string;
  /** Requests each connection cycles through (path and headers), so that many callers and rows are exercised. */
  requests: { path: string; headers?: Record<string, string> }[];
}

function run(target: Target, connections: number, duration: number) {
  return autocannon({
    url: target.url,
    requests: target.requests.map((r) => ({ method: 'GET', ...r })),
    connections,
    duration,
    pipelining: 1,
  });
}

/** A warm-up, then the measured run; CPU is the server-side processes' user+system time over the measured run. */
export async function measure(
  target: Target,
  serverPids: () => Map<number, string>,
  settings: LoadSettings,
): Promise<LoadResult> {
  await run(target, settings.connections, settings.warmupSeconds);
  const pidsBefore = serverPids();
  const cpuBefore = new Map([...pidsBefore.keys()].map((pid) => [pid, cpuSeconds(pid)]));
  const result = await run(target, settings.connections, settings.durationSeconds);
  const pidsAfter = new Map([...pidsBefore, ...serverPids()]);
  const requests = result.requests.total;
  let cpu = 0;
  const cpuByProcess: Record<string, number> = {};
  for (const [pid, name] of pidsAfter) {
    // A process that ended during the run counts through its parent's reaped-children time instead.
    const after = cpuSeconds(pid);
    const used = after === undefined ? 0 : after - (cpuBefore.get(pid) ?? 0);
    cpu += used;
    cpuByProcess[name] = (cpuByProcess[name] ?? 0) + (requests ? Math.round((used / requests) * 1e6) : 0);
  }
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    cpuMicrosPerRequest: requests ? (cpu / requests) * 1e6 : 0,
    cpuByProcess,
  };
}
