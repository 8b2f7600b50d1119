#!/usr/bin/env node
// `npm run test:schemathesis [-- --smoke]`: runs schemathesis (PyPI, pinned, in a virtualenv it creates) against the
// gateway's own /openapi.json on the whole stack as `npm start` runs it — fresh data folder, free ports, real tokens
// from the development identity provider — with every phase (examples, coverage, fuzzing, stateful). Fails on any 5xx
// and on any response the document does not describe (status, content type, body schema, Allow header).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchStack, passwordToken, scimClientToken } from '@mileage/devstack';
import { pythonTool } from '../python-tool.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const st = pythonTool({ requirement: 'schemathesis==4.32.5', venvName: 'schemathesis-venv-4.32.5', binary: 'st' });
const smoke = process.argv.includes('--smoke');
// Bounded for 2 shared cores: cases per operation and phase, and a hard stop for each schemathesis process.
const MAX_EXAMPLES = smoke ? 5 : 25;
const RUN_TIMEOUT_MS = (smoke ? 4 : 10) * 60_000;
const CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_schema_conformance',
  'allow_header_conformance',
  'unsupported_method',
];
const V1_SCOPES = 'users_read drives_read groups_read groups_read_reported_drives';

// The contract's rate limits would answer most generated requests 429: raised for this run only.
const stack = await launchStack({ env: { RATE_LIMIT_MULTIPLIER: '1000000' } });
const workDir = mkdtempSync(path.join(tmpdir(), 'mileage-schemathesis-'));
try {
  const { issuer, gatewayUrl } = stack;
  // A demo administrator with every /v1 scope the development client grants, and the provisioning client.
  const userToken = await passwordToken(issuer, { username: 'alice@example.com', password: 'demo', scope: V1_SCOPES });
  const scimToken = await scimClientToken(issuer, 'scim-dev-secret');

  // One run per API surface, each with the token that surface accepts.
  const runs = [
    { name: '/v1', pathRegex: '^/v1/', token: userToken },
    { name: '/scim/v2', pathRegex: '^/scim/v2/', token: scimToken },
  ];
  // Each phase is its own schemathesis run (same seed, same stack), so the figures say how many cases each phase sent.
  const PHASES = ['examples', 'coverage', 'fuzzing', 'stateful'];
  const table = [];
  for (const r of runs) {
    for (const phase of PHASES) {
      const started = Date.now();
      const result = spawnSync(
        st,
        [
          '--config-file',
          path.join(here, 'schemathesis.toml'),
          'run',
          `${gatewayUrl}/openapi.json`,
          '--phases',
          phase,
          '--checks',
          CHECKS.join(','),
          '--include-path-regex',
          r.pathRegex,
          '--max-examples',
          String(MAX_EXAMPLES),
          '--seed',
          '20261123',
          '--continue-on-failure',
          '--suppress-health-check',
          'too_slow,filter_too_much',
          '--request-timeout',
          '10',
          '--header',
          `Authorization: Bearer ${r.token}`,
          '--no-color',
        ],
        {
          // Its cache (.schemathesis/) goes to the run's temporary folder: every run starts fresh.
          cwd: workDir,
          encoding: 'utf8',
          maxBuffer: 64 * 1024 * 1024,
          timeout: RUN_TIMEOUT_MS,
        },
      );
      const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
      const cases = /(\d+) generated/.exec(output)?.[1] ?? '?';
      const scenarios = /Scenarios:\s+(\d+)/.exec(output)?.[1];
      const ok = result.status === 0;
      table.push({
        surface: r.name,
        phase,
        cases: scenarios ? `${cases} (${scenarios} scenarios)` : cases,
        seconds: ((Date.now() - started) / 1000).toFixed(1),
        result: ok ? 'passed' : `FAILED (exit ${result.status ?? result.signal})`,
      });
      // On failure, schemathesis's report with each case's curl reproduction (a line can hold a query of many
      // kilobytes: each is cut).
      if (!ok)
        console.error(
          output
            .trim()
            .split('\n')
            .map((line) => (line.length > 500 ? `${line.slice(0, 500)}… (${line.length} characters)` : line))
            .join('\n'),
        );
    }
  }
  console.log(`schemathesis 4.32.5, ${MAX_EXAMPLES} examples per operation${smoke ? ' (smoke)' : ''}:`);
  console.table(table);
  const failed = table.some((row) => row.result !== 'passed');
  if (failed) process.exitCode = 1;
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
} finally {
  await stack.stop();
  rmSync(workDir, { recursive: true, force: true });
}
