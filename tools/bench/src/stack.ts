// The measured system for `npm run bench`: a throw-away PostgreSQL with the bench data, the development identity
// provider, the four services and the gateway as separate processes (as deployed), and the bare server.
import {
  developmentPki,
  freePlanPorts,
  httpOk,
  passwordToken,
  prepareDatabases,
  runtimeUrls,
  scimClientToken,
  scriptOf,
  startPostgres,
  wireStack,
  type RunningPostgres,
  type ServiceName,
} from '@mileage/devstack';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import { freePort, postgresPids, rssMb, startNode, stopAll, waitFor, type Child } from './proc';
import { seedBench, type BenchData } from './seed';

/** The services the bench starts behind the gateway, each its own process (and, with --cpu-prof, profile). */
export const BENCH_SERVICES = ['users', 'groups', 'drives', 'scim'] as const;

export const SCOPES = 'users_read drives_read groups_read groups_read_reported_drives';

export interface BenchStack {
  data: BenchData;
  gatewayUrl: string;
  bareUrl: string;
  /** The architecture's floor (floor-server.ts): node:http and the gateway's calls to the owners, no gateway stack. */
  floorUrl: string;
  /** The stand-in OTLP collector every process exports its spans to (otlp-sink.ts). */
  sinkUrl: string;
  /** Access token of each caller (user id), every /v1 scope. */
  tokens: Map<string, string>;
  /** Access token of the provisioning client (client credentials of mileage-scim, scope "scim"). */
  scimToken: string;
  /** Server-side processes of each target, by name (PostgreSQL: the postmaster and every backend). */
  fullPids(): Map<number, string>;
  barePids(): Map<number, string>;
  /** The floor's: the floor server instead of the gateway, the same services and PostgreSQL. */
  floorPids(): Map<number, string>;
  /** Resident memory (MB) of every process but PostgreSQL's. */
  rss(): Record<string, number>;
  /** The other gateways' addresses (--gateways), which the full path's load is spread over too. */
  gatewayReplicas: string[];
  /** Those processes' ids by name, and the /metrics address of each that serves one (for the V8 heap). */
  processes: Record<string, number>;
  metricsUrls: Record<string, string>;
  /** Learns which service each PostgreSQL backend serves (call before a measurement). */
  refreshBackends(): Promise<void>;
  /** The key both targets sign page cursors with. */
  cursorSecret: string;
  /** A query on the bench database (outside any measurement). */
  sql<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  /** The runtime role's URL of each service with a database (row-level security applies to it, as to the service). */
  runtimeUrls: Partial<Record<ServiceName, string>>;
  /** An access token of a signed-in account (a caller, or one of `moreAccounts`) with the scopes asked for. */
  signIn(userId: string, scope: string): Promise<string>;
  /** The environment of an operator's command (`npm run org`): the services' addresses and the operator's TLS files. */
  operatorEnv: Record<string, string>;
  stop(): Promise<void>;
}

export async function startBenchStack(options: {
  users: number;
  drives: number;
  callers: number;
  walk: number;
  cpuProfDir?: string;
  /** Node.js / V8 flags for the gateway and the services (e.g. to compare heap settings). */
  nodeFlags?: string[];
  /** The services' runtime roles bypass row-level security (to measure what the organization policies cost). */
  bypassRls?: boolean;
  /** The gRPC hop in plaintext (GRPC_PLAINTEXT) instead of mutual TLS: the price of TLS and end-user contexts. */
  plaintext?: boolean;
  /** Gateway processes (the chart runs two replicas): the full path's load is spread over them. Default 1. */
  gateways?: number;
  /** The services behind the gateway (BENCH_SERVICES by default; bench:export runs every one). */
  services?: readonly ServiceName[];
  /** Organization exports on (their archives in the run's folder, as `npm start` keeps them under DATA_DIR). */
  exports?: boolean;
  /**
   * More seeding after the bench's own (indexes in place): answers the user ids that sign in besides the callers
   * (their tokens are in `tokens`).
   */
  moreAccounts?: (admin: pg.Client) => Promise<string[]>;
  log: (msg: string) => void;
}): Promise<BenchStack> {
  const workdir = mkdtempSync(path.join(tmpdir(), 'mileage-bench-'));
  let postgres: RunningPostgres | undefined;
  const stop = async () => {
    await stopAll();
    await postgres?.stop().catch(() => {});
    rmSync(workdir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  try {
    postgres = await startPostgres({
      dir: workdir,
      port: await freePort(),
      password: 'bench',
      persistent: false,
      // fsync stays on; more WAL between checkpoints for the seeding's bulk load (the seeding ends with a CHECKPOINT,
      // so no checkpoint falls in a measured run either way).
      settings: { max_wal_size: '4GB', checkpoint_timeout: '15min' },
      log: options.log,
    });
    // The services as deployed: migrations as each schema's owner, the service as its runtime role (which owns
    // nothing, so the organizations' row-level security applies to every statement it runs). The seeding and the
    // bare server use the superuser, to which no policy applies (--bypass-rls gives the runtime roles the same, to
    // measure what the policies cost).
    const databaseUrl = postgres.adminUrl;
    const services = options.services ?? BENCH_SERVICES;
    const databases = await prepareDatabases(postgres, workdir, services, { LOG_LEVEL: 'error' });
    if (options.bypassRls) {
      const admin = new pg.Client({ connectionString: databaseUrl });
      await admin.connect();
      for (const d of Object.values(databases)) await admin.query(`ALTER ROLE ${d.roles.runtime.role} BYPASSRLS`);
      await admin.end();
    }
    const started = Date.now();
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    const { data, moreAccounts } = await (async () => {
      const seeded = await seedBench(admin, databaseUrl, options);
      return { data: seeded, moreAccounts: (await options.moreAccounts?.(admin)) ?? [] };
    })().finally(() => admin.end());
    options.log(
      `Seeded ${options.users} users, ${options.drives} drives and a sync team of ${options.walk} reported drives${moreAccounts.length ? ', and more' : ''} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );

    const [sinkPort, barePort, floorPort] = await Promise.all([1, 2, 3].map(() => freePort()));
    const { idpPort, ...ports } = await freePlanPorts(services, 1);
    const metrics = Object.fromEntries(Object.entries(ports.metricsPorts).map(([s, p]) => [s, p![0]!]));
    const cursorSecret = randomBytes(32).toString('base64url');
    const scimClientSecret = randomBytes(24).toString('base64url');
    const accountsFile = path.join(workdir, 'accounts.json');
    const wiring = wireStack({
      services,
      // Mutual TLS on the hop, as installed (a development CA of this run's own), unless priced against plaintext.
      grpc: options.plaintext
        ? { plaintext: true }
        : { pki: await developmentPki(path.join(workdir, 'grpc-pki'), ['127.0.0.1']) },
      hosts: ['127.0.0.1'],
      ...ports,
      identity: {
        port: idpPort,
        dataDir: path.join(workdir, 'idp'),
        scimClientSecret,
        accountsFile,
        accessTokenTtlSeconds: 3600,
      },
      databaseUrls: runtimeUrls(databases),
      secrets: {
        cursor: cursorSecret,
        actorAttestation: randomBytes(32).toString('base64url'),
        ...(services.includes('webhooks') ? { webhooksKey: randomBytes(32).toString('base64url') } : {}),
      },
      extra: {
        // Tracing on, as deployed (http/protobuf, 10 %), into a sink that counts and, when asked, records.
        all: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sinkPort}` },
        // Exports' archives on local disk, as under `npm start`; the job looked for every 250 ms rather than 2 s, so
        // that a measured export starts when it is asked for.
        ...(options.exports
          ? { services: { EXPORT_ARCHIVE_DIR: path.join(workdir, 'archives'), EXPORT_POLL_MS: '250' } }
          : {}),
        // The load is one organization's (alone: no share bounds it), or a hundred's SCIM lookups at up to 64
        // connections: neither their rate limits nor their shares of a replica refuse them (the share's bookkeeping
        // still runs on every request).
        gateway: {
          RATE_LIMIT_MULTIPLIER: '1000000',
          GATEWAY_ORGANIZATION_SHARE: '1',
          GATEWAY_CAPACITY_UNITS: '1000000',
          GATEWAY_CAPACITY_UNITS_PER_SECOND: '100000000',
        },
      },
    });
    const { issuer } = wiring;
    const gatewayUrl = wiring.gatewayUrl();
    const bareUrl = `http://127.0.0.1:${barePort}`;
    const floorUrl = `http://127.0.0.1:${floorPort}`;
    const nodeArgs = (name: string) => [
      ...(options.nodeFlags ?? []),
      ...(options.cpuProfDir
        ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`, `--cpu-prof-name=${name}.cpuprofile`]
        : []),
    ];
    if (options.cpuProfDir) mkdirSync(options.cpuProfDir, { recursive: true });

    startNode('otlp-sink', path.join(__dirname, 'otlp-sink.js'), { PORT: String(sinkPort) });
    const accountIds = [
      ...new Set([...data.callers, ...data.adminGroups.map((g) => g.adminId), data.walkGroup.adminId, ...moreAccounts]),
    ];
    writeFileSync(
      accountsFile,
      JSON.stringify(accountIds.map((userId) => ({ username: `${userId}@bench.example`, password: 'bench', userId }))),
    );
    const idp = startNode('dev-idp', scriptOf('dev-idp'), wiring.idp!);
    // Ready before the services and gateways start (as the chaos stack does): started beside eight other processes on
    // two cores, it once took over the 30 s a start is given (CI, 2026-11-27, the two-gateway smoke).
    await waitFor('dev-idp', () => httpOk(`${issuer}/.well-known/openid-configuration`), 60_000);
    const serviceChildren: Child[] = services.map((name) =>
      startNode(name, scriptOf(name), wiring.services[name]![0]!, nodeArgs(name)),
    );
    const gateway = startNode('gateway', scriptOf('gateway'), wiring.gateways[0]!, nodeArgs('gateway'));
    // More gateways on ports of their own, counted as "gateway" (their CPU adds up under that name).
    const otherGateways = await Promise.all(
      Array.from({ length: (options.gateways ?? 1) - 1 }, async () => {
        const [port, metricsPort] = [await freePort(), await freePort()];
        const env = { ...wiring.gateways[0]!, PORT: String(port), METRICS_PORT: String(metricsPort) };
        // The same heap flags; never profiled (the pieces report reads the first gateway's profile).
        const child = startNode('gateway', scriptOf('gateway'), env, options.nodeFlags ?? []);
        return { child, url: `http://127.0.0.1:${port}` };
      }),
    );
    const bare = startNode('bare', path.join(__dirname, 'baseline-server.js'), {
      PORT: String(barePort),
      DATABASE_URL: databaseUrl,
      CURSOR_SECRET: cursorSecret,
      SCIM_BASE_URL: wiring.services.scim![0]!.SCIM_BASE_URL!,
    });
    // With the gateway's environment (its certificate, the services' addresses, the cursor key) and heap flags.
    const floor = startNode(
      'floor',
      path.join(__dirname, 'floor-server.js'),
      { ...wiring.gateways[0]!, PORT: String(floorPort), BENCH_SCOPES: SCOPES },
      options.nodeFlags ?? [],
    );
    await waitFor('otlp sink', () => httpOk(`http://127.0.0.1:${sinkPort}/stats`));
    for (const url of [gatewayUrl, ...otherGateways.map((g) => g.url)]) {
      await waitFor('gateway', () => httpOk(`${url}/readyz`));
      // Readiness is the gateway's own; wait until it has seen the services it calls answer.
      await waitFor('services seen by the gateway', async () => {
        const res = await fetch(`${url}/healthz/dependencies`);
        const { dependencies } = (await res.json()) as {
          dependencies: Record<string, { up: boolean; checkedAt: string | null }>;
        };
        return services.every((d) => dependencies[d]?.up && dependencies[d].checkedAt);
      });
    }
    await waitFor('bare server', () => httpOk(`${bareUrl}/healthz`));
    await waitFor('floor server', () => httpOk(`${floorUrl}/healthz`));

    const tokens = new Map<string, string>();
    for (const userId of accountIds)
      tokens.set(
        userId,
        await passwordToken(issuer, { username: `${userId}@bench.example`, password: 'bench', scope: SCOPES }),
      );
    const scimToken = await scimClientToken(issuer, scimClientSecret);

    // PostgreSQL's processes, each backend named by the service it serves (its application_name), so that the
    // database's CPU can be told apart by caller; the postmaster and background workers are "postgres".
    const backendOf = new Map<number, string>();
    const monitor = new pg.Client({ connectionString: databaseUrl, application_name: 'bench-monitor' });
    await monitor.connect();
    const refreshBackends = async () => {
      const { rows } = await monitor.query<{ pid: number; name: string }>(
        `SELECT pid, application_name AS name FROM pg_stat_activity WHERE backend_type = 'client backend'`,
      );
      for (const r of rows) backendOf.set(r.pid, `pg:${r.name.replace(/^mileage-/, '') || 'bare'}`);
    };
    const pgPids = (): [number, string][] =>
      postgresPids(postgres!.dataDir).map((pid) => [pid, backendOf.get(pid) ?? 'postgres']);
    const named = [gateway, ...serviceChildren];
    const operatorEnv: Record<string, string> = {
      ...Object.fromEntries(services.map((s) => [`${s.toUpperCase()}_ADDRESS`, wiring.address(s)])),
      ...Object.fromEntries(Object.entries(wiring.grpcConfig('operator')).map(([k, v]) => [k, String(v)])),
    };
    return {
      data,
      gatewayUrl,
      bareUrl,
      floorUrl,
      sinkUrl: `http://127.0.0.1:${sinkPort}`,
      tokens,
      scimToken,
      gatewayReplicas: otherGateways.map((g) => g.url),
      fullPids: () =>
        new Map([
          ...[...named, ...otherGateways.map((g) => g.child)].map((c): [number, string] => [c.pid, c.name]),
          ...pgPids(),
        ]),
      barePids: () => new Map([[bare.pid, 'bare'], ...pgPids()]),
      floorPids: () =>
        new Map([...[floor, ...serviceChildren].map((c): [number, string] => [c.pid, c.name]), ...pgPids()]),
      rss: () =>
        Object.fromEntries([...named, idp, bare, floor].map((c) => [c.name, Math.round(rssMb(c.pid) * 10) / 10])),
      processes: Object.fromEntries([...named, idp, bare].map((c) => [c.name, c.pid])),
      metricsUrls: Object.fromEntries(
        Object.entries(metrics).map(([name, port]) => [name, `http://127.0.0.1:${port}/metrics`]),
      ),
      refreshBackends,
      cursorSecret,
      sql: async <R extends pg.QueryResultRow>(text: string, values?: unknown[]) =>
        (await monitor.query<R>(text, values)).rows,
      runtimeUrls: runtimeUrls(databases),
      signIn: (userId, scope) =>
        passwordToken(issuer, { username: `${userId}@bench.example`, password: 'bench', scope }),
      operatorEnv,
      stop: async () => {
        await monitor.end().catch(() => {});
        await stop();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
