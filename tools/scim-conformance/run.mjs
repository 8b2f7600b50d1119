#!/usr/bin/env node
// `npm run test:scim-conformance`: runs scim2-tester (PyPI scim2-cli, pinned) against the whole stack as `npm start`
// runs it — fresh data folder, free ports — and fails on any check that is not an expected, documented failure.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchStack, scimClientToken } from '@mileage/devstack';
import { pythonTool } from '../python-tool.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const SCIM2_CLI = 'scim2-cli==0.6.0';
const scimBin = pythonTool({ requirement: SCIM2_CLI, venvName: 'scim2-venv-0.6.0', binary: 'scim' });

const stack = await launchStack();
try {
  const issuer = stack.issuer;
  const token = await scimClientToken(issuer, 'scim-dev-secret');

  const started = Date.now();
  const result = spawnSync(scimBin, ['--url', `${stack.gatewayUrl}/scim/v2`, 'test'], {
    env: { ...process.env, SCIM_CLI_HEADERS: `Authorization: Bearer ${token}` },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 10 * 60_000,
  });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  // Each result is a line "<STATUS> <check>" followed by indented detail lines.
  const results = [];
  for (const line of output.split('\n')) {
    const head = /^(SUCCESS|ERROR|CRITICAL|WARNING|SKIPPED)\s+(\S+)/.exec(line);
    if (head) results.push({ status: head[1], check: head[2], message: '' });
    else if (results.length && line.startsWith('  ') && results.at(-1).message === '')
      results.at(-1).message = line.trim();
  }
  if (results.length === 0) throw new Error(`scim2-tester produced no results:\n${output.slice(0, 4000)}`);
  const { failures: expected } = JSON.parse(readFileSync(path.join(here, 'expected-failures.json'), 'utf8'));
  const failed = results.filter((r) => r.status === 'ERROR' || r.status === 'CRITICAL');
  const unexpected = failed.filter(
    (f) => !expected.some((e) => (e.check === '*' || e.check === f.check) && f.message.includes(e.message)),
  );
  const passed = results.filter((r) => r.status === 'SUCCESS').length;
  console.log(
    `scim2-tester (${SCIM2_CLI}): ${results.length} checks in ${((Date.now() - started) / 1000).toFixed(1)} s — ${passed} passed, ${failed.length - unexpected.length} expected failures (docs/provisioning.md), ${unexpected.length} unexpected`,
  );
  for (const e of expected) {
    const n = failed.filter((f) => (e.check === '*' || e.check === f.check) && f.message.includes(e.message)).length;
    console.log(`  expected ×${n}: ${e.message} — ${e.reason}`);
  }
  if (unexpected.length) {
    for (const u of unexpected) console.error(`  UNEXPECTED ${u.status} ${u.check}: ${u.message}`);
    process.exitCode = 1;
  }
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
} finally {
  await stack.stop();
}
