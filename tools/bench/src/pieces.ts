// `npm run bench -- --cpu-prof DIR`: where each process's CPU goes during a route's measured run, piece by piece
// (token check, rate limit, access log, metrics, tracing, the gRPC hop, …), from its V8 profile. A sample counts for
// the first piece found walking its stack from the running function up to the root, so a socket write the HTTP
// response makes is the HTTP server's and one the gRPC client makes is the hop's.

import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

/** The parts of a V8 .cpuprofile this reads. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  /** Microseconds of the monotonic clock process.hrtime reads. */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A piece: its name, and the frames that belong to it (tested against "<url> <function name>"). */
export interface Piece {
  name: string;
  frames: RegExp;
}

/** What no piece claims: the event loop, promise jobs and Node's stream plumbing between pieces. */
export const UNCLAIMED = 'event loop and Node internals';
export const GARBAGE_COLLECTION = 'garbage collection';

/** The pieces of the gateway's and the services' request paths, most specific first. */
export const PIECES: Piece[] = [
  { name: 'tracing', frames: /@opentelemetry\/|runtime\/dist\/tracing\.js/ },
  { name: 'access log', frames: /node_modules\/(pino|sonic-boom|@pinojs)\/|runtime\/dist\/logger\.js/ },
  { name: 'metrics', frames: /node_modules\/prom-client\/|runtime\/dist\/metrics\.js/ },
  { name: 'rate limit', frames: /rate-limiter-flexible|gateway\/dist\/rate-limit\.js/ },
  {
    name: 'token and caller',
    frames: /node_modules\/jose\/|gateway\/dist\/(auth|guard|jwks|organization-credentials)\.js/,
  },
  { name: 'attestation and end-user context', frames: /runtime\/dist\/(attestation|end-user)\.js/ },
  { name: 'validation', frames: /node_modules\/zod\/|gateway\/dist\/(schemas|drive-params|cursor)\.js/ },
  {
    name: 'database client',
    frames: /node_modules\/(knex|pg|pg-protocol|pg-pool|tarn)\/|runtime\/dist\/(db|tenancy|declaring-client)\.js/,
  },
  {
    name: 'gRPC and protobuf',
    frames:
      /@grpc\/grpc-js|@bufbuild\/protobuf|proto\/dist\/|node:internal\/http2\/|runtime\/dist\/(grpc-client|grpc-server|wire-time|service|circuit-breaker)\.js|gateway\/dist\/account-loader\.js/,
  },
  {
    name: 'Express and middleware',
    frames:
      /node_modules\/(express|router|body-parser|parseurl|path-to-regexp|on-finished|finalhandler|raw-body)\/|gateway\/dist\/app\.js/,
  },
  { name: 'HTTP server', frames: /^node:(_http_|internal\/http)|^node:http / },
  {
    name: 'route and handler',
    frames: /gateway\/dist\/(routes\/|v1\.js|problems\.js)|services\/[a-z]+\/dist\/|scim-domain\/dist\//,
  },
];

/**
 * Milliseconds of CPU per piece of `profile` between `fromUs` and `toUs` (process.hrtime µs), idle excluded. Every
 * busy sample counts once: for its innermost frame that a piece claims, garbage collection and V8's own `(program)`
 * apart, the rest to UNCLAIMED.
 */
export function attributePieces(
  profile: CpuProfile,
  fromUs: number,
  toUs: number,
  pieces: Piece[] = PIECES,
): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const pieceOf = new Map<number, string>();
  const claim = (id: number): string => {
    const known = pieceOf.get(id);
    if (known !== undefined) return known;
    const { functionName, url } = byId.get(id)!.callFrame;
    let piece: string;
    if (functionName === '(garbage collector)') piece = GARBAGE_COLLECTION;
    else if (functionName === '(program)') piece = 'V8 (program)';
    else {
      const frame = `${url} ${functionName}`;
      const own = url ? pieces.find((p) => p.frames.test(frame))?.name : undefined;
      const up = parent.get(id);
      piece = own ?? (up === undefined ? UNCLAIMED : claim(up));
    }
    pieceOf.set(id, piece);
    return piece;
  };
  const totals = new Map<string, number>();
  let time = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    time += profile.timeDeltas[i]!;
    // A sample lasts until the next one.
    const lasted = profile.timeDeltas[i + 1] ?? 0;
    if (time < fromUs || time >= toUs) continue;
    const node = byId.get(profile.samples[i]!)!;
    if (node.callFrame.functionName === '(idle)') continue;
    const piece = claim(node.id);
    totals.set(piece, (totals.get(piece) ?? 0) + lasted / 1000);
  }
  return totals;
}

/** µs of CPU per request for each piece, largest first; `requests` answered in the window. */
export function perRequest(totalsMs: Map<string, number>, requests: number): [string, number][] {
  return [...totalsMs]
    .map(([piece, ms]): [string, number] => [piece, requests ? Math.round((ms * 1000) / requests) : 0])
    .sort((a, b) => b[1] - a[1]);
}

/** A measured run of the full path: its route and when it ran. */
export interface ProfiledRun {
  title: string;
  requests: number;
  window: { fromUs: number; toUs: number };
}

/**
 * The per-request table of every process whose profile is in `dir` (`<name>.cpuprofile`), for each run: the pieces
 * of at least 10 µs, largest first. Throws when a process's profile is missing or holds no sample of a run's window.
 */
export function piecesReport(dir: string, processes: string[], runs: ProfiledRun[]): string[] {
  const lines = [
    '',
    `Where each process's CPU goes per request, piece by piece (V8 profiles in ${dir}; the profiler adds its own cost):`,
  ];
  const profiles = processes.map((name) => {
    const file = path.join(dir, `${name}.cpuprofile`);
    if (!existsSync(file)) throw new Error(`no CPU profile of ${name} (${file})`);
    return { name, profile: JSON.parse(readFileSync(file, 'utf8')) as CpuProfile };
  });
  for (const run of runs) {
    lines.push(`${run.title} (${run.requests} requests)`);
    let busy = 0;
    for (const { name, profile } of profiles) {
      const rows = perRequest(attributePieces(profile, run.window.fromUs, run.window.toUs), run.requests);
      const total = rows.reduce((sum, [, us]) => sum + us, 0);
      busy += total;
      // A process that takes no part in the route spends only its idle timers.
      if (total < 50) continue;
      const shown = rows.filter(([, us]) => us >= 10).map(([piece, us]) => `${piece} ${us}`);
      lines.push(`  ${name.padEnd(8)} ${String(total).padStart(6)} µs: ${shown.join(', ')}`);
    }
    if (busy === 0) throw new Error(`the CPU profiles hold no sample of the run of ${run.title}`);
  }
  return lines;
}
