#!/usr/bin/env node
// `npm run test:keycloak`: the acceptance tests against the whole stack with real Keycloak instead of the
// development identity provider. Starts Keycloak (deploy/keycloak/run.sh: fetched from Maven Central, cached),
// checks the realm (`run.sh check`: deploy/keycloak/smoke-test.mjs), starts the stack as `npm start` does with OIDC_ISSUER pointing
// at Keycloak (fresh data folder, free ports), runs tools/acceptance against it, and stops everything.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchStack } from '@mileage/devstack';
import { freePort } from '@mileage/runtime/config';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const keycloakEnv = {
  ...process.env,
  KEYCLOAK_PORT: String(await freePort()),
  KEYCLOAK_MANAGEMENT_PORT: String(await freePort()),
};
const runSh = path.join(root, 'deploy/keycloak/run.sh');
const started = Date.now();
const kc = spawnSync('bash', [runSh, 'start'], {
  env: keycloakEnv,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
});
if (kc.status !== 0) process.exit(kc.status ?? 1);
const issuer = kc.stdout.trim().split('\n').pop();
let stack;
let failed = false;
try {
  // run.sh check: the realm smoke test with the admin-API checks (it knows the throw-away admin's password), and
  // that the committed development realm is what build-dev-realm.mjs makes.
  const smoke = spawnSync('bash', [runSh, 'check'], { env: keycloakEnv, stdio: 'inherit' });
  if (smoke.status !== 0) throw new Error('the realm smoke test failed');

  stack = await launchStack({ env: { OIDC_ISSUER: issuer } });
  const tests = spawnSync(
    process.execPath,
    ['--test', '--test-reporter=spec', path.join(root, 'tools/acceptance/dist/acceptance.test.js')],
    {
      env: { ...process.env, ACCEPTANCE_GATEWAY_URL: stack.gatewayUrl, ACCEPTANCE_ISSUER: issuer },
      stdio: 'inherit',
    },
  );
  if (tests.status !== 0) throw new Error('the acceptance tests failed against Keycloak');
  console.log(
    `acceptance tests passed against Keycloak (${issuer}) in ${((Date.now() - started) / 1000).toFixed(0)} s including Keycloak's start`,
  );
} catch (err) {
  failed = true;
  console.error(err instanceof Error ? err.message : err);
} finally {
  await stack?.stop();
  spawnSync('bash', [runSh, 'stop'], { env: keycloakEnv, stdio: 'inherit' });
}
process.exit(failed ? 1 : 0);
