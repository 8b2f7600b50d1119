#!/usr/bin/env node
// The system from its images: PostgreSQL, Redis and Keycloak (the production realm plus the development overlay, the
// realm `npm run test:keycloak` imports) from the local test images, the migrations run by each service's image as
// the chart's hook Jobs run them, the five services and the gateway as containers configured as the
// chart's Deployments configure them (their environment from devstack's wireStack, the one wiring of every stack),
// then the acceptance suite (tools/acceptance) against the gateway. Last, SIGTERM
// to each of the six containers, front to back: each must log its drain and exit 0.
//
//   node deploy/docker/stack.mjs <tag> <postgres image> <redis image> <keycloak image>   (deploy/docker/images.sh
//   prints the four; after `npm run build`: it uses tools/devstack's role provisioning and seed, and tools/acceptance)
//
// Every container shares the host's network namespace and binds 127.0.0.1 only (no CNI network is set up on these
// machines); the six run with a read-only root, /tmp as their only writable path, no capabilities and no new
// privileges, as the chart's securityContext has them. All containers of the run are removed at the end.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(import.meta.url);
const { freePort } = require('@mileage/runtime/config');
const { HealthClient, createGrpcClient, grpcTls } = require('@mileage/runtime/grpc');
const { drivesV1, groupsV1, usersV1 } = require('@mileage/proto');
const {
  DATABASE_SERVICES,
  developmentGrpcConfig,
  developmentPki,
  freePlanPorts,
  provisionServiceRoles,
  seedDemoData,
  SERVICE_NAMES,
  wireStack,
} = require('@mileage/devstack');
const pg = require('pg');

const [tag, postgresImage, redisImage, keycloakImage] = process.argv.slice(2);
if (!keycloakImage) {
  console.error('usage: stack.mjs <tag> <postgres image> <redis image> <keycloak image>');
  process.exit(2);
}
const image = (component) => `localhost/mileage-${component}:${tag}`;
const run = `mileage-stack-${process.pid}`;
const started = Date.now();
const seconds = (since) => ((Date.now() - since) / 1000).toFixed(1);
const say = (message) => console.log(`stack: ${message} (${seconds(started)} s)`);

const ports = {};
for (const name of ['postgres', 'redis', 'keycloak', 'keycloakManagement']) ports[name] = await freePort();
const issuer = `http://127.0.0.1:${ports.keycloak}/realms/mileage`;
const secret = () => randomBytes(32).toString('base64url');
const secrets = {
  postgres: secret(),
  keycloakAdmin: secret(),
  cursor: secret(),
  attestation: secret(),
  webhooks: secret(),
};

function podman(args, { check = true } = {}) {
  const result = spawnSync('podman', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (check && result.status !== 0) throw new Error(`podman ${args[0]} failed: ${result.stderr.trim()}`);
  return result;
}
function podmanAsync(args) {
  return new Promise((resolve, reject) => {
    const child = spawn('podman', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}
const envArgs = (env) => Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
// The chart's container securityContext (read-only root, no capabilities, no privilege escalation) and its /tmp.
const RESTRICTED = [
  '--read-only',
  '--tmpfs',
  '/tmp:size=16m',
  '--cap-drop',
  'ALL',
  '--security-opt',
  'no-new-privileges',
];
function start(name, args) {
  podman(['run', '-d', '--name', `${run}-${name}`, '--label', `mileage-stack=${run}`, '--network', 'host', ...args]);
}
const logs = (name) => {
  const { stdout, stderr } = podman(['logs', `${run}-${name}`], { check: false });
  return stdout + stderr;
};
function removeAll() {
  const ids = podman(['ps', '-aq', '--filter', `label=mileage-stack=${run}`], { check: false }).stdout.split('\n');
  if (ids.some(Boolean)) podman(['rm', '-f', '-t', '0', ...ids.filter(Boolean)], { check: false });
}
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    removeAll();
    process.exit(1);
  });

/** Polls until ready() resolves true; fails with the container's last log lines when it exits or time runs out. */
async function waitFor(name, ready, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await ready().catch(() => false)) return;
    const state = podman(['inspect', '--format', '{{.State.Status}}', `${run}-${name}`], { check: false }).stdout;
    if (state.trim() !== 'running' || Date.now() > deadline)
      throw new Error(`${name} is not ready (${state.trim()}):\n${logs(name).split('\n').slice(-30).join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
const httpOk = (url) => fetch(url, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok);

let failed = false;
const dataDir = mkdtempSync(path.join(tmpdir(), 'mileage-stack-images-'));
const pkiDir = path.join(dataDir, 'grpc-pki');
// Who is told which address and secret comes from the one wiring. It is planned in plaintext: each container's hop
// variables are tlsArgs's instead (the chart's mount of its Secret); the runtime roles' URLs are set per container.
const wiring = wireStack({
  services: SERVICE_NAMES,
  hosts: ['127.0.0.1'],
  ...(await freePlanPorts(SERVICE_NAMES, 1)),
  identity: { issuer },
  databaseUrls: {},
  secrets: { cursor: secrets.cursor, actorAttestation: secrets.attestation, webhooksKey: secrets.webhooks },
  grpc: { plaintext: true },
  redisUrl: `redis://127.0.0.1:${ports.redis}`,
  webhookTargets: 'public',
  extra: { all: { LOG_LEVEL: 'info' }, gateway: { HOST: '127.0.0.1' } },
});
const address = wiring.address;
const gatewayUrl = wiring.gatewayUrl();
/** A process's wired environment for its container: the hop's variables come from tlsArgs instead. */
const containerEnv = (env) => {
  const { GRPC_PLAINTEXT: _plaintext, ...rest } = env;
  return rest;
};
/**
 * Mutual TLS on the hop, as the chart runs it: each container gets its component's certificate, key and the CA as
 * the chart mounts its Secret (/etc/mileage/grpc-tls, read-only, owned by the image's user) and the GRPC_TLS_*
 * variables the chart sets. The certificates come from a development CA of this run's own.
 */
function tlsArgs(component) {
  const dir = path.join(dataDir, `tls-${component}`);
  mkdirSync(dir, { mode: 0o700 });
  const files = developmentGrpcConfig(pkiDir, component);
  for (const [from, to] of [
    [files.GRPC_TLS_CERT_FILE, 'tls.crt'],
    [files.GRPC_TLS_KEY_FILE, 'tls.key'],
    [files.GRPC_TLS_CA_FILE, 'ca.crt'],
  ]) {
    copyFileSync(from, path.join(dir, to));
    chownSync(path.join(dir, to), 10001, 10001);
  }
  chownSync(dir, 10001, 10001);
  return [
    ...['-v', `${dir}:/etc/mileage/grpc-tls:ro`],
    ...envArgs({
      GRPC_TLS_CERT_FILE: '/etc/mileage/grpc-tls/tls.crt',
      GRPC_TLS_KEY_FILE: '/etc/mileage/grpc-tls/tls.key',
      GRPC_TLS_CA_FILE: '/etc/mileage/grpc-tls/ca.crt',
      GRPC_TLS_SPIFFE_PREFIX: files.GRPC_TLS_SPIFFE_PREFIX,
    }),
  ];
}
try {
  await developmentPki(pkiDir, ['127.0.0.1']);
  // The host's own calls (readiness, the demo data) as `seed`: the identity the demo-data writes admit.
  const seedCredentials = () => grpcTls(developmentGrpcConfig(pkiDir, 'seed')).channelCredentials();
  // PostgreSQL, Redis and Keycloak at once; Keycloak takes longest.
  const adminUrl = `postgres://postgres:${secrets.postgres}@127.0.0.1:${ports.postgres}/postgres`;
  start('postgres', [
    ...['--read-only', '--tmpfs', '/tmp'],
    ...envArgs({ POSTGRES_PASSWORD: secrets.postgres, PGPORT: ports.postgres }),
    postgresImage,
  ]);
  start('redis', [redisImage, '--port', String(ports.redis)]);
  const realm = path.join(root, 'deploy/keycloak/dev/realm-mileage.json');
  start('keycloak', [
    ...['-v', `${realm}:/opt/keycloak/data/import/mileage-realm.json:ro`],
    ...envArgs({ KC_BOOTSTRAP_ADMIN_USERNAME: 'admin', KC_BOOTSTRAP_ADMIN_PASSWORD: secrets.keycloakAdmin }),
    keycloakImage,
    ...['start', '--optimized', '--import-realm', '--http-enabled=true', '--hostname-strict=false'],
    ...['--http-host=127.0.0.1', `--http-port=${ports.keycloak}`, `--http-management-port=${ports.keycloakManagement}`],
  ]);
  await waitFor(
    'postgres',
    async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.end();
      return true;
    },
    60_000,
  );
  say('PostgreSQL ready');

  // What the chart expects to exist (docs/operations-helm.md): per service a schema owner (migrations) and a runtime
  // role (the service), made here as `npm start` makes them.
  const roles = await provisionServiceRoles(adminUrl, dataDir, [...DATABASE_SERVICES]);
  const urlFor = ({ role, password }) =>
    `postgres://${role}:${encodeURIComponent(password)}@127.0.0.1:${ports.postgres}/postgres`;
  for (const name of DATABASE_SERVICES) {
    const t0 = Date.now();
    const job = podman(
      [
        ...['run', '--rm', '--name', `${run}-${name}-migrate`, '--label', `mileage-stack=${run}`, '--network', 'host'],
        ...RESTRICTED,
        ...envArgs({
          LOG_LEVEL: 'info',
          DATABASE_POOL_MAX: 2,
          MIGRATION_DATABASE_URL: urlFor(roles[name].owner),
          DATABASE_URL: urlFor(roles[name].runtime),
        }),
        ...[image(name), 'node', 'migrate.js'],
      ],
      { check: false },
    );
    if (job.status !== 0) throw new Error(`${name}'s migration Job failed:\n${job.stdout}${job.stderr}`);
    say(`${name}: migration Job completed in ${seconds(t0)} s`);
  }

  for (const name of SERVICE_NAMES) {
    start(name, [
      ...RESTRICTED,
      ...tlsArgs(name),
      ...envArgs({
        ...containerEnv(wiring.services[name][0]),
        ...(roles[name] ? { DATABASE_URL: urlFor(roles[name].runtime) } : {}),
      }),
      image(name),
    ]);
  }
  await Promise.all(
    SERVICE_NAMES.map(async (name) => {
      const health = new HealthClient(address(name), seedCredentials());
      try {
        await waitFor(name, () => health.check('', 1_000), 120_000);
      } finally {
        health.close();
      }
    }),
  );
  say('the five services serve');

  await waitFor(
    'keycloak',
    async () =>
      (await httpOk(`http://127.0.0.1:${ports.keycloakManagement}/health/ready`)) &&
      httpOk(`${issuer}/.well-known/openid-configuration`),
    300_000,
  );
  say('Keycloak ready');
  const node = (args, env = {}) =>
    spawnSync(process.execPath, args, { env: { ...process.env, ...env }, stdio: 'inherit' }).status === 0;
  if (!node([path.join(root, 'deploy/keycloak/build-dev-realm.mjs'), '--check']))
    throw new Error('deploy/keycloak/dev/realm-mileage.json is not what build-dev-realm.mjs makes');
  if (
    !node([path.join(root, 'deploy/keycloak/smoke-test.mjs'), issuer], {
      KEYCLOAK_ADMIN_PASSWORD: secrets.keycloakAdmin,
    })
  )
    throw new Error('the realm smoke test failed');

  start('gateway', [
    ...RESTRICTED,
    ...tlsArgs('gateway'),
    ...envArgs(containerEnv(wiring.gateways[0])),
    image('gateway'),
  ]);
  await waitFor('gateway', () => httpOk(`${gatewayUrl}/readyz`), 60_000);
  say('gateway ready');

  // The demo data the acceptance suite signs in to, written through the services as `npm start` seeds it.
  const seedOptions = { defaultDeadlineMs: 10_000, credentials: seedCredentials() };
  const clients = {
    users: createGrpcClient(usersV1.UsersServiceClient, address('users'), seedOptions),
    organizations: createGrpcClient(usersV1.OrganizationsServiceClient, address('users'), seedOptions),
    groups: createGrpcClient(groupsV1.GroupsServiceClient, address('groups'), seedOptions),
    drives: createGrpcClient(drivesV1.DrivesServiceClient, address('drives'), seedOptions),
  };
  await seedDemoData({ adminUrl, ...clients }).finally(() => Object.values(clients).forEach((c) => c.close()));
  say('demo data seeded');

  const t0 = Date.now();
  if (
    !node(['--test', '--test-reporter=spec', path.join(root, 'tools/acceptance/dist/acceptance.test.js')], {
      ACCEPTANCE_GATEWAY_URL: gatewayUrl,
      ACCEPTANCE_ISSUER: issuer,
    })
  )
    throw new Error('the acceptance tests failed against the stack from the images');
  say(`acceptance tests passed in ${seconds(t0)} s`);

  // SIGTERM, front to back as a rollout would stop them: the process logs that it shuts down on SIGTERM, then that
  // it stopped (every drain step done within SHUTDOWN_TIMEOUT_MS), and exits 0. Users, Groups and Drives take ~10 s
  // each (the bound of their drain): they are stopped together, after SCIM and before Webhooks, which they call.
  const drain = async (name) => {
    const t = Date.now();
    const stop = await podmanAsync(['stop', '-t', '30', `${run}-${name}`]);
    if (stop.code !== 0) throw new Error(`podman stop ${name} failed: ${stop.stderr.trim()}`);
    const code = podman(['inspect', '--format', '{{.State.ExitCode}}', `${run}-${name}`]).stdout.trim();
    const lines = logs(name)
      .split('\n')
      .flatMap((line) => {
        try {
          return [JSON.parse(line)];
        } catch {
          return [];
        }
      });
    const from = lines.findIndex((l) => l.msg === 'shutting down' && l.signal === 'SIGTERM');
    const drained = from >= 0 && lines.slice(from).some((l) => l.msg === 'stopped');
    const stepFailed = lines.some((l) => l.msg === 'shutdown step failed');
    if (code !== '0' || !drained || stepFailed)
      throw new Error(
        `${name} did not drain cleanly on SIGTERM (exit ${code}):\n${logs(name).split('\n').slice(-15).join('\n')}`,
      );
    say(`${name}: SIGTERM → "shutting down", "stopped", exit 0 in ${seconds(t)} s`);
  };
  const waves = [['gateway'], ['scim'], ['users', 'groups', 'drives'], ['webhooks']];
  if (waves.flat().length !== SERVICE_NAMES.length + 1) throw new Error('a service is missing from the drain order');
  for (const wave of waves) await Promise.all(wave.map(drain));
} catch (err) {
  failed = true;
  console.error(`stack: ${err instanceof Error ? err.message : err}`);
} finally {
  removeAll();
  rmSync(dataDir, { recursive: true, force: true });
}
say(failed ? 'FAILED' : 'the system ran from its images; acceptance passed; every container drained');
process.exit(failed ? 1 : 0);
