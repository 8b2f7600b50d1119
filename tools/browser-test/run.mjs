#!/usr/bin/env node
// `npm run test:browser [-- --keycloak]`: the /docs console in Debian's chromium (src/console.test.ts) against the
// stack with the development identity provider, or with --keycloak against the stack with real Keycloak
// (deploy/keycloak/run.sh: the development realm, whose mileage-docs client is told the gateway's origin through
// MILEAGE_DOCS_WEB_ORIGIN, as an operator would). Without chromium it says so in one line and fails; CI installs it.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const { missingChromium } = require(path.join(here, 'dist', 'console.js'));
const missing = missingChromium();
if (missing) {
  console.error(`test:browser: ${missing}`);
  process.exit(1);
}

const test = (env) =>
  spawnSync(
    process.execPath,
    ['--test', '--test-reporter=spec', '--test-timeout=300000', path.join(here, 'dist', 'console.test.js')],
    { stdio: 'inherit', env: { ...process.env, ...env } },
  ).status ?? 1;

if (!process.argv.includes('--keycloak')) process.exit(test({}));

const { freePort } = require('@mileage/runtime/config');
const gatewayPort = String(await freePort());
const runSh = path.join(here, '..', '..', 'deploy', 'keycloak', 'run.sh');
const keycloakEnv = {
  ...process.env,
  KEYCLOAK_PORT: String(await freePort()),
  KEYCLOAK_MANAGEMENT_PORT: String(await freePort()),
  MILEAGE_DOCS_WEB_ORIGIN: `http://127.0.0.1:${gatewayPort}`,
  // A busy machine (CI shares it with the other suites) can take Keycloak past run.sh's 300 s default.
  KEYCLOAK_READY_TIMEOUT: process.env.KEYCLOAK_READY_TIMEOUT ?? '600',
};
const kc = spawnSync('bash', [runSh, 'start'], {
  env: keycloakEnv,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
});
if (kc.status !== 0) process.exit(kc.status ?? 1);
let status = 1;
try {
  status = test({ BROWSER_TEST_ISSUER: kc.stdout.trim().split('\n').pop(), BROWSER_TEST_GATEWAY_PORT: gatewayPort });
} finally {
  spawnSync('bash', [runSh, 'stop'], { env: keycloakEnv, stdio: 'inherit' });
}
process.exit(status);
