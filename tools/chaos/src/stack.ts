// The system under test of `npm run chaos`: an embedded PostgreSQL with one role per service, Redis, the development
// identity provider, two replicas of each gRPC service (A on 127.0.0.1, B on 127.0.0.2, the same port) and two gateways
// the same way. Clients reach a service's replicas through grpc-js's static target `ipv4:127.0.0.1:P,127.0.0.2:P`
// (round-robin), as they reach a headless Kubernetes Service's pods through DNS.
import {
  developmentPki,
  freePlanPorts,
  generateVolume,
  httpOk,
  passwordToken,
  prepareDatabases,
  runtimeUrls,
  scimClientToken,
  scriptOf,
  startPostgres,
  wireStack,
} from '@mileage/devstack';
import type { DevelopmentPki } from '@mileage/pki';
import { freePort } from '@mileage/runtime/config';
import { grpcTls, HealthClient, type GrpcTls, type GrpcTlsConfig } from '@mileage/runtime/grpc';
import { isWarningOrWorse } from '@mileage/runtime/telemetry';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import * as path from 'node:path';
import pg from 'pg';

const ROOT = path.resolve(__dirname, '..', '..', '..');
/**
 * The gateways' gRPC deadline and how long a circuit stays open (GRPC_DEADLINE_MS, GRPC_CIRCUIT_OPEN_MS): set here and
 * expected by the frozen-replica phase from the same figures.
 */
export const GATEWAY_TIMING = { deadlineMs: 2_000, openMs: 3_000 };

export const SERVICES = ['users', 'groups', 'drives', 'scim'] as const;
export type ServiceName = (typeof SERVICES)[number];
export const HOSTS = { a: '127.0.0.1', b: '127.0.0.2' } as const;
export type ReplicaId = keyof typeof HOSTS;
/** How long each gateway trusts a SCIM secret token it resolved: the stack sets it, the token row judges by it. */
export const SCIM_TOKEN_CACHE_SECONDS = 5;

export const SCOPES = 'users_read drives_read groups_read groups_read_reported_drives';

/** How many of a replica's latest warning and error lines are kept for the report of a failed fault. */
const KEPT_WARNINGS = 500;

/** A Node.js process of the stack that can be stopped (SIGTERM, as the kubelet does), frozen and started again. */
export class Replica {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stderr = '';
  private readonly warnings: { at: number; line: string }[] = [];

  constructor(
    readonly name: string,
    private readonly script: string,
    private env: Record<string, string>,
    /** Its readiness, as its probe sees it. */
    readonly ready: () => Promise<boolean>,
    /** Calls it has served since it started (for "takes traffic"); undefined when it cannot tell. */
    readonly served?: () => Promise<number>,
    /** Where its log lines (stdout and stderr, every start) are appended; none kept when undefined. */
    private readonly logFile?: string,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): void {
    const child = spawn(process.execPath, [this.script], {
      env: { ...process.env, LOG_LEVEL: this.logFile ? 'info' : 'warn', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-4000)));
    createInterface({ input: child.stdout! }).on('line', (line) => this.keepIfNotable(line));
    if (this.logFile) {
      const out = createWriteStream(this.logFile, { flags: 'a' });
      child.stdout!.pipe(out);
      child.stderr!.pipe(out);
    }
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    this.child = child;
  }

  /** Changes its environment from its next start on (undefined: unset), as a changed Secret does for a new pod. */
  reconfigure(changes: Record<string, string | undefined>): void {
    const env = { ...this.env };
    for (const [name, value] of Object.entries(changes)) {
      if (value === undefined) delete env[name];
      else env[name] = value;
    }
    this.env = env;
  }

  /** A variable of its environment as its next start gets it. */
  setting(name: string): string | undefined {
    return this.env[name];
  }

  running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGTERM and wait for the drain; SIGKILL after killAfterMs (a kubelet's grace period). */
  async stop(killAfterMs = 20_000): Promise<{ code: number | null; drainMs: number }> {
    const child = this.child;
    if (!child || !this.running()) return { code: child?.exitCode ?? null, drainMs: 0 };
    const started = Date.now();
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    await this.exited;
    clearTimeout(timer);
    return { code: child.exitCode, drainMs: Date.now() - started };
  }

  signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
    this.child?.kill(signal);
  }

  /** Its latest warnings and errors (JSON log lines), for the report of a failed fault (noted). */
  notable(from: number, to: number): string[] {
    return this.warnings.filter((w) => w.at >= from && w.at <= to).map((w) => w.line);
  }

  private keepIfNotable(line: string): void {
    if (!isWarningOrWorse(line)) return;
    let entry: { level?: unknown; time?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      return;
    }
    const at = typeof entry.time === 'string' ? Date.parse(entry.time) : Date.now();
    this.warnings.push({ at, line });
    if (this.warnings.length > KEPT_WARNINGS) this.warnings.splice(0, this.warnings.length - KEPT_WARNINGS);
  }

  lastWords(): string {
    return this.stderr.trim();
  }

  /** Polls readiness (and, when asked, until it has served calls), failing when it exits or timeoutMs passes. */
  async waitUntilReady(timeoutMs = 30_000, takesTraffic = false): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running()) throw new Error(`${this.name} exited: ${this.lastWords()}`);
      const ok = await this.ready().catch(() => false);
      if (ok && (!takesTraffic || !this.served || (await this.served().catch(() => 0)) > 0)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    const said = this.lastWords();
    throw new Error(
      `${this.name} was not ${takesTraffic ? 'taking traffic' : 'ready'} within ${timeoutMs} ms${said ? `: ${said}` : ''}`,
    );
  }
}

export interface ChaosStack {
  adminUrl: string;
  issuer: string;
  gateways: Record<ReplicaId, { replica: Replica; url: string }>;
  services: Record<ServiceName, Record<ReplicaId, Replica>>;
  idp: Replica;
  /** Tokens of callers (each with every /v1 scope), the groups they administer, and the SCIM client's token. */
  callers: { userId: string; userName: string; token: string; groupId?: number }[];
  scimToken: string;
  /** An organization admin of organization 1 (the first caller) with a token of scope organization_manage. */
  organizationAdmin: { userId: string; token: string };
  /** Each service's address as its callers are given it (both replicas). */
  addresses: Record<ServiceName, string>;
  /** The hop's development PKI (mutual TLS, as installed) and a component's GRPC_TLS_* of it. */
  pki: DevelopmentPki;
  grpcConfig(component: 'gateway' | 'seed' | 'operator'): GrpcTlsConfig;
  /** Stops and starts the embedded PostgreSQL (same data, same port). */
  postgres: { stop(): Promise<void>; start(): Promise<void> };
  redis: { stop(): Promise<void>; start(): Promise<void> };
  /** Puts a new signing key in front (the old ones stay published) and restarts the provider to sign with it. */
  rotateSigningKey(): Promise<void>;
  token(userId: string): Promise<string>;
  stop(): Promise<void>;
}

const fromRoot = (p: string) => path.join(ROOT, p);

export interface ChaosStackOptions {
  users: number;
  drives: number;
  log: (m: string) => void;
  /** A folder that keeps each replica's log, `<replica>.log` at level info (`npm run chaos -- --logs DIR`). */
  logDir?: string;
  /** More sign-in accounts for the identity provider (users a fault seeds into its own organizations). */
  accounts?: { username: string; password: string; userId: string }[];
}

export async function startChaosStack(options: ChaosStackOptions) {
  if (options.logDir) mkdirSync(options.logDir, { recursive: true });
  const workdir = mkdtempSync(path.join(tmpdir(), 'mileage-chaos-'));
  const cleanups: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    rmSync(workdir, { recursive: true, force: true });
  };
  try {
    return await build(workdir, cleanups, stopAll, options);
  } catch (err) {
    await stopAll();
    throw err;
  }
}

async function build(
  workdir: string,
  cleanups: (() => Promise<void>)[],
  stopAll: () => Promise<void>,
  options: ChaosStackOptions,
): Promise<ChaosStack> {
  const logFile = (replica: string) => options.logDir && path.join(options.logDir, `${replica}.log`);
  // PostgreSQL, as `npm start` runs it: per service a schema owner (migrations) and a runtime role (the service).
  const postgres = await startPostgres({
    dir: workdir,
    port: await freePort(),
    password: randomBytes(12).toString('base64url'),
    // Kept across the restart fault; the whole work folder is removed at the end.
    persistent: true,
    settings: { fsync: 'off', synchronous_commit: 'off' },
    log: options.log,
  });
  cleanups.push(() => postgres.stop());
  const { adminUrl } = postgres;
  const databases = await prepareDatabases(postgres, workdir, SERVICES, { LOG_LEVEL: 'warn' });
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await generateVolume(admin, { users: options.users, drives: options.drives });
    // The first caller (below) administers organization 1: it mints and revokes SCIM secret tokens.
    await admin.query(
      `UPDATE users.users SET organization_admin = true
        WHERE id = (SELECT u.id FROM users.users u
                      LEFT JOIN groups.team_members m ON m.user_id = u.id AND m.is_admin
                     ORDER BY m.team_id IS NULL, u.id LIMIT 1)`,
    );
    await admin.query('VACUUM ANALYZE');
  } finally {
    await admin.end();
  }
  const seeded = new pg.Client({ connectionString: adminUrl });
  await seeded.connect();
  const { rows: people } = await seeded
    .query<{ id: string; user_name: string; team_id: string | null }>(
      // The teams' admins (they read their team's reported drives) and the first users.
      `SELECT u.id, u.user_name, m.team_id FROM users.users u
         LEFT JOIN groups.team_members m ON m.user_id = u.id AND m.is_admin
        ORDER BY m.team_id IS NULL, u.id LIMIT 16`,
    )
    .finally(() => seeded.end());

  // Redis: the two gateways' shared rate limiter.
  const redisPort = await freePort();
  const testenv = (await import(fromRoot('tools/testenv/redis.mjs'))) as {
    findRedisServer(): { command: string; env: NodeJS.ProcessEnv };
  };
  const redisServer = testenv.findRedisServer();
  let redisChild: ChildProcess | undefined;
  const redis = {
    start: async () => {
      const child = spawn(
        redisServer.command,
        ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        { stdio: 'ignore', env: redisServer.env },
      );
      redisChild = child;
      await until('redis', async () => {
        if (child.exitCode !== null) throw new Error('redis-server exited');
        return (await tcpAnswers(redisPort)) === true;
      });
    },
    stop: async () => {
      const child = redisChild;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    },
  };
  await redis.start();
  cleanups.push(redis.stop);

  // The development identity provider: real signed tokens, a JWKS the gateways fetch.
  const idpData = path.join(workdir, 'idp');
  const accountsFile = path.join(workdir, 'accounts.json');
  writeFileSync(
    accountsFile,
    JSON.stringify([
      ...people.map((p) => ({ username: p.user_name, password: 'chaos', userId: p.id })),
      ...(options.accounts ?? []),
    ]),
  );
  const scimSecret = randomBytes(12).toString('base64url');
  const replicaIds = Object.keys(HOSTS) as ReplicaId[];
  const { idpPort, ...ports } = await freePlanPorts(SERVICES, replicaIds.length);
  // The hop is mutual TLS, as installed: the stack's own CA, a certificate per component (the chaos process probes
  // readiness as `seed`, which may call only the health service and the demo-data writes).
  const pki = await developmentPki(path.join(workdir, 'grpc-pki'), Object.values(HOSTS));
  const wiring = wireStack({
    services: SERVICES,
    grpc: { pki },
    hosts: replicaIds.map((id) => HOSTS[id]),
    ...ports,
    identity: {
      port: idpPort,
      dataDir: idpData,
      scimClientSecret: scimSecret,
      accountsFile,
      accessTokenTtlSeconds: 3600,
    },
    databaseUrls: runtimeUrls(databases),
    secrets: { cursor: randomBytes(32).toString('base64url'), actorAttestation: randomBytes(32).toString('base64url') },
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    extra: {
      // Two replicas' pools of each service against one PostgreSQL.
      services: { DATABASE_POOL_MAX: '4' },
      // The load is a few callers at hundreds of requests a second: the limits would answer 429 to it.
      gateway: {
        RATE_LIMIT_MULTIPLIER: '10000',
        SCIM_TOKEN_CACHE_SECONDS: String(SCIM_TOKEN_CACHE_SECONDS),
        GRPC_DEADLINE_MS: String(GATEWAY_TIMING.deadlineMs),
        GRPC_CIRCUIT_OPEN_MS: String(GATEWAY_TIMING.openMs),
      },
    },
  });
  const { issuer } = wiring;
  const idp = new Replica(
    'dev-idp',
    scriptOf('dev-idp'),
    wiring.idp!,
    () => httpOk(`${issuer}/.well-known/openid-configuration`),
    undefined,
    logFile('dev-idp'),
  );
  idp.start();
  cleanups.push(async () => void (await idp.stop()));
  // Ready before the eight service replicas start: alongside them, on a busy 2-core machine, it took over 60 s.
  await idp.waitUntilReady(60_000);

  const probeCredentials = grpcTls(wiring.grpcConfig('seed')).channelCredentials();
  const services = {} as ChaosStack['services'];
  for (const s of SERVICES) {
    services[s] = {} as Record<ReplicaId, Replica>;
    replicaIds.forEach((id, i) => {
      const env = wiring.services[s]![i]!;
      const replica = new Replica(
        `${s}-${id}`,
        scriptOf(s),
        env,
        () => grpcServing(env.GRPC_ADDRESS!, probeCredentials),
        () => servedCalls(`http://127.0.0.1:${env.METRICS_PORT}/metrics`),
        logFile(`${s}-${id}`),
      );
      replica.start();
      cleanups.push(async () => void (await replica.stop()));
      services[s][id] = replica;
    });
  }
  const gateways = {} as ChaosStack['gateways'];
  replicaIds.forEach((id, i) => {
    const url = wiring.gatewayUrl(i);
    const replica = new Replica(
      `gateway-${id}`,
      scriptOf('gateway'),
      wiring.gateways[i]!,
      () => httpOk(`${url}/readyz`),
      undefined,
      logFile(`gateway-${id}`),
    );
    replica.start();
    cleanups.push(async () => void (await replica.stop()));
    gateways[id] = { replica, url };
  });
  for (const s of SERVICES) for (const id of replicaIds) await services[s][id].waitUntilReady(60_000);
  for (const id of replicaIds) await gateways[id].replica.waitUntilReady(60_000);

  const token = async (userId: string) =>
    passwordToken(issuer, {
      username: people.find((p) => p.id === userId)!.user_name,
      password: 'chaos',
      scope: SCOPES,
    });
  const callers: ChaosStack['callers'] = [];
  for (const p of people)
    callers.push({
      userId: p.id,
      userName: p.user_name,
      token: await token(p.id),
      ...(p.team_id ? { groupId: Number(p.team_id) } : {}),
    });
  const scimToken = await scimClientToken(issuer, scimSecret);
  const organizationAdmin = {
    userId: people[0]!.id,
    token: await passwordToken(issuer, {
      username: people[0]!.user_name,
      password: 'chaos',
      scope: 'organization_manage',
    }),
  };

  return {
    adminUrl,
    issuer,
    gateways,
    services,
    idp,
    callers,
    scimToken,
    organizationAdmin,
    addresses: Object.fromEntries(SERVICES.map((s) => [s, wiring.address(s)])) as Record<ServiceName, string>,
    pki,
    grpcConfig: wiring.grpcConfig,
    postgres: { stop: () => postgres.stop(), start: () => postgres.start() },
    redis,
    rotateSigningKey: async () => {
      const run = spawnSync(process.execPath, [fromRoot('packages/dev-idp/dist/rotate-keys.js')], {
        env: { ...process.env, DEV_IDP_DATA_DIR: idpData },
        encoding: 'utf8',
      });
      if (run.status !== 0) throw new Error(`key rotation failed: ${run.stderr}`);
      await idp.stop();
      idp.start();
      await idp.waitUntilReady();
    },
    token,
    stop: stopAll,
  };
}

/** Whether a gRPC server answers SERVING for "" (what Kubernetes' gRPC probe asks). */
async function grpcServing(address: string, credentials: ReturnType<GrpcTls['channelCredentials']>): Promise<boolean> {
  const client = new HealthClient(address, credentials);
  try {
    return await client.check('', 500);
  } finally {
    client.close();
  }
}

/** The calls a service's server has handled (grpc_server_handled_total summed), from its /metrics. */
async function servedCalls(url: string): Promise<number> {
  const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
  const text = await res.text();
  let total = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('grpc_server_handled_total{')) total += Number(line.slice(line.lastIndexOf(' ') + 1)) || 0;
  return total;
}

async function tcpAnswers(port: number): Promise<boolean> {
  const { connect } = await import('node:net');
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not start within ${timeoutMs} ms`);
}
