// Requests per second one core serves, per route, from a full-path run's CPU per request: the gateway's and the
// services' that took part in the route (PostgreSQL is sized apart), each less the CPU it uses when idle.
import type { LoadResult } from './load';
import { metricSum } from './memory';

export interface Capacity {
  /** The processes that served the route: those whose served-request counter grew during its run. */
  components: string[];
  /** CPU µs per request of each, less its idle CPU over the run (timers, metrics, health checks); whole µs. */
  cpuMicrosPerRequest: Record<string, number>;
  /** 1e6 over the sum: requests per second per core of gateway and services together. */
  requestsPerSecondPerCore: number;
  /** Requests per second one core of each component serves for this route (those above their idle CPU). */
  byComponent: Record<string, number>;
}

/** The counter of requests each component has served: HTTP requests for the gateway, gRPC calls for a service. */
export const SERVED_COUNTERS: Record<string, string> = {
  gateway: 'http_server_request_duration_seconds_count',
  default: 'grpc_server_handled_total',
};

/** The components whose counter of served requests grew between the two readings. */
export function takingPart(before: Record<string, number>, after: Record<string, number>): string[] {
  return Object.keys(after).filter((name) => after[name]! > (before[name] ?? 0));
}

/**
 * The gRPC calls each service served per request the gateway served between the two readings (warm-up included on
 * both sides): how well the per-turn batches of a route's reads hold under load. Undefined without gateway requests.
 */
export function callsPerRequest(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> | undefined {
  const requests = (after.gateway ?? 0) - (before.gateway ?? 0);
  if (requests <= 0) return undefined;
  return Object.fromEntries(
    takingPart(before, after)
      .filter((name) => name !== 'gateway')
      .map((name) => [name, Math.round(((after[name]! - (before[name] ?? 0)) / requests) * 100) / 100]),
  );
}

/**
 * `run`: the full path's measured run; `idleCpu`: CPU seconds per second of each process with no load at all.
 * Idle CPU goes on under load at the same rate, so its share per request (idle / throughput) is not the route's.
 */
export function capacity(
  run: Pick<LoadResult, 'cpuByProcess' | 'requestsPerSecond'>,
  idleCpu: Record<string, number>,
  components: string[],
): Capacity {
  const cpuMicrosPerRequest: Record<string, number> = {};
  for (const name of components) {
    const idle = run.requestsPerSecond > 0 ? ((idleCpu[name] ?? 0) * 1e6) / run.requestsPerSecond : 0;
    cpuMicrosPerRequest[name] = Math.max(0, Math.round((run.cpuByProcess[name] ?? 0) - idle));
  }
  const total = Object.values(cpuMicrosPerRequest).reduce((a, b) => a + b, 0);
  return {
    components,
    cpuMicrosPerRequest,
    requestsPerSecondPerCore: total > 0 ? Math.round(1e6 / total) : 0,
    // A component whose CPU did not rise above its idle has no bound to state.
    byComponent: Object.fromEntries(
      components.filter((c) => cpuMicrosPerRequest[c]! > 0).map((c) => [c, Math.round(1e6 / cpuMicrosPerRequest[c]!)]),
    ),
  };
}

/** The printed line of a route's capacity. */
export function capacityLine(c: Capacity): string {
  const cpu = Object.entries(c.cpuMicrosPerRequest).map(([name, us]) => `${name} ${us.toFixed(0)}`);
  const cores = Object.entries(c.byComponent).map(([name, rps]) => `${name} ${rps.toFixed(0)}`);
  return (
    `  capacity: ${c.requestsPerSecondPerCore.toFixed(0)} req/s per core (CPU µs/req less idle: ${cpu.join(' + ')}; ` +
    `PostgreSQL apart); req/s one core of each serves: ${cores.join(', ')}`
  );
}

/** Each component's served-request count now (components whose /metrics cannot be read are left out). */
export async function servedCounts(metricsUrls: Record<string, string>): Promise<Record<string, number>> {
  const read = await Promise.all(
    Object.entries(metricsUrls).map(async ([name, url]) => {
      try {
        const text = await (await fetch(url, { signal: AbortSignal.timeout(2_000) })).text();
        return [[name, metricSum(text, SERVED_COUNTERS[name] ?? SERVED_COUNTERS.default!)] as const];
      } catch {
        // Not counted: such a component is not said to take part.
        return [];
      }
    }),
  );
  return Object.fromEntries(read.flat());
}
