#!/usr/bin/env node
// `npm run test:keycloak`: the acceptance tests against the whole stack with real Keycloak instead of the
// development identity provider. Starts Keycloak (deploy/keycloak/run.sh: fetched from Maven Central, cached),
// checks the realm (deploy/keycloak/smoke-test.mjs), starts the stack as `npm start` does with OIDC_ISSUER pointing
// at Keycloak (fresh data folder, free ports), runs tools/acceptance against it, and stops everything.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const keycloakEnv = { ...process.env, KEYCLOAK_PORT: String(await freePort()), KEYCLOAK_MANAGEMENT_PORT: String(await freePort()) };
const runSh = path.join(root, 'deploy/keycloak/run.sh');
const started = Date.now();
const kc = spawnSync('bash', [runSh, 'start'], { env: keycloakEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
if (kc.status !== 0) process.exit(kc.status ?? 1);
const issuer = kc.stdout.trim().split('\n').pop();
let stack;
let dataDir;
let failed = false;
try {
  const smoke = spawnSync(process.execPath, [path.join(root, 'deploy/keycloak/smoke-test.mjs'), issuer], { stdio: 'inherit' });
  if (smoke.status !== 0) throw new Error('the realm smoke test failed');

  const env = {};
  for (const n of ['EMBEDDED_POSTGRES_PORT', 'GATEWAY_PORT', 'GATEWAY_METRICS_PORT', 'USERS_GRPC_PORT', 'USERS_METRICS_PORT', 'GROUPS_GRPC_PORT', 'GROUPS_METRICS_PORT', 'DRIVES_GRPC_PORT', 'DRIVES_METRICS_PORT', 'SCIM_GRPC_PORT', 'SCIM_METRICS_PORT']) {
    env[n] = String(await freePort());
  }
  dataDir = mkdtempSync(path.join(tmpdir(), 'acceptance-keycloak-'));
  chmodSync(dataDir, 0o755);
  const { DATABASE_URL: _db, REDIS_URL: _redis, ...inherited } = process.env;
  stack = spawn(process.execPath, [path.join(root, 'tools/devstack/dist/main.js')], {
    env: { ...inherited, ...env, DATA_DIR: dataDir, LOG_LEVEL: 'warn', OIDC_ISSUER: issuer },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  await new Promise((resolve, reject) => {
    const onData = (chunk) => {
      out += chunk.toString();
      if (out.includes('Ctrl-C stops everything.')) resolve();
    };
    stack.stdout.on('data', onData);
    stack.stderr.on('data', onData);
    stack.once('exit', (code) => reject(new Error(`the stack exited (${code}):\n${out}`)));
  });
  const tests = spawnSync(process.execPath, ['--test', '--test-reporter=spec', path.join(root, 'tools/acceptance/dist/acceptance.test.js')], {
    env: { ...process.env, ACCEPTANCE_GATEWAY_URL: `http://127.0.0.1:${env.GATEWAY_PORT}`, ACCEPTANCE_ISSUER: issuer },
    stdio: 'inherit',
  });
  if (tests.status !== 0) throw new Error('the acceptance tests failed against Keycloak');
  console.log(`acceptance tests passed against Keycloak (${issuer}) in ${((Date.now() - started) / 1000).toFixed(0)} s including Keycloak's start`);
} catch (err) {
  failed = true;
  console.error(err instanceof Error ? err.message : err);
} finally {
  if (stack && stack.exitCode === null) {
    const exited = new Promise((resolve) => stack.once('exit', resolve));
    process.kill(-stack.pid, 'SIGTERM');
    await exited;
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  spawnSync('bash', [runSh, 'stop'], { env: keycloakEnv, stdio: 'inherit' });
}
process.exit(failed ? 1 : 0);
