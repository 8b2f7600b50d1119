#!/usr/bin/env node
// Smoke run of the example's three documented commands (CI, .ci/run): the whole stack on free ports (launchStack, the
// development identity provider issuing real tokens), `npm run export -w examples/payroll-sync` twice (the second
// changes nothing), a drive deleted through the Drives service (gRPC DeleteDrive) and `npm run export` again: the
// change feed's tombstone removes its row and only its row; then `npm run receive -w examples/payroll-sync`: it syncs,
// applies a signed withdrawal to the CSV, refuses a forged one, and stops cleanly on SIGTERM; then `npm run
// organization-export -w examples/payroll-sync` as the organization admin: the archive downloaded and every file
// checked against its manifest, and `tar` lists the same files. A minute or so.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const { launchStack } = require('@mileage/devstack');
const { createGrpcClient, grpcTls } = require('@mileage/runtime/grpc');
const { freePort } = require('@mileage/runtime/config');
const { drivesV1 } = require('@mileage/proto');
const { signWebhook } = require('@mileage/client');
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const fail = (message) => {
  throw new Error(`payroll-sync smoke: ${message}`);
};

function npmRun(script, env) {
  const child = spawn('npm', ['run', '--silent', script, '-w', 'examples/payroll-sync'], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = async (pattern, ms) => {
    const until = Date.now() + ms;
    while (!pattern.test(out)) {
      if (Date.now() > until || child.exitCode !== null) fail(`no ${pattern} from npm run ${script}:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return { child, exited, output: () => out, waitFor };
}

const dir = mkdtempSync(join(tmpdir(), 'payroll-smoke-'));
const drivesPort = String(await freePort());
const stack = await launchStack({ env: { DRIVES_GRPC_PORT: drivesPort } });
// The stack's mutual TLS, as its demo-data loader (the one identity the drive writes admit).
const drives = createGrpcClient(drivesV1.DrivesServiceClient, `127.0.0.1:${drivesPort}`, {
  defaultDeadlineMs: 10_000,
  credentials: grpcTls(stack.grpcConfig('seed')).channelCredentials(),
});
try {
  const secret = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64')}`;
  const port = await freePort();
  const env = {
    MILEAGE_API_URL: stack.gatewayUrl,
    MILEAGE_GROUP_ID: '1',
    MILEAGE_TOKEN_URL: `${stack.issuer}/protocol/openid-connect/token`,
    MILEAGE_USERNAME: 'alice@example.com',
    MILEAGE_PASSWORD: 'demo',
    PAYROLL_CSV: join(dir, 'team-1.csv'),
    WEBHOOK_SECRET: secret,
    RECEIVER_PORT: String(port),
    PAYROLL_ARCHIVE: join(dir, 'organization-1.tar.gz'),
  };
  for (const expected of [
    /full sync of group 1: \d+ new or changed.*\(rewritten\)/,
    /incremental sync.*\(unchanged\)/,
  ]) {
    const run = npmRun('export', env);
    if ((await run.exited) !== 0 || !expected.test(run.output())) fail(`npm run export:\n${run.output()}`);
    process.stdout.write(run.output());
  }
  // The first two columns (drive_id, driver_id) never hold a comma or a quote.
  const csvLines = () => readFileSync(env.PAYROLL_CSV, 'utf8').split('\n').slice(1).filter(Boolean);
  const csvIds = () => csvLines().map((line) => line.split(',')[0]);

  // The driver deletes a reported drive in the app (a platform write inside the demo organization, 1): the next export
  // removes its row, and only its row.
  const lines = csvLines();
  const [deletedId, driverId] = lines.at(-1).split(',');
  await drives.deleteDrive({ driveId: Number(deletedId), userId: driverId }, { organizationId: 1 });
  const third = npmRun('export', env);
  if (
    (await third.exited) !== 0 ||
    !/incremental sync of group 1: 0 new or changed, 1 removed; \d+ rows .*\(rewritten\)/.test(third.output())
  )
    fail(`npm run export after a deletion:\n${third.output()}`);
  process.stdout.write(third.output());
  if (csvLines().join('\n') !== lines.slice(0, -1).join('\n'))
    fail(`deleted drive ${deletedId}: the CSV is not the same less its row`);
  const before = csvIds();

  const receiver = npmRun('receive', env);
  try {
    await receiver.waitFor(/sync: 0 changed/, 60_000);
    const url = `http://127.0.0.1:${port}/webhooks`;
    const withdrawn = before[0];
    const body = JSON.stringify({
      type: 'drive.report_withdrawn',
      timestamp: new Date().toISOString(),
      data: { drive_id: Number(withdrawn), group_id: '1', user_id: 'BobDriver1', modified: new Date().toISOString() },
    });
    const post = (headers) =>
      fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body });
    const forged = await post(
      signWebhook(`whsec_${Buffer.from('x'.repeat(24)).toString('base64')}`, 'msg_smoke', body),
    );
    if (forged.status !== 400) fail(`a forged delivery answered ${forged.status}`);
    const good = await post(signWebhook(secret, 'msg_smoke', body));
    if (good.status !== 204) fail(`a signed delivery answered ${good.status}`);
    const after = csvIds();
    if (after.includes(withdrawn) || after.length !== before.length - 1) fail(`drive ${withdrawn} is still in the CSV`);
    process.kill(-receiver.child.pid, 'SIGTERM');
    await receiver.waitFor(/stopped/, 15_000);
    await receiver.exited;
    process.stdout.write(receiver.output());
  } finally {
    if (receiver.child.exitCode === null) process.kill(-receiver.child.pid, 'SIGKILL');
  }

  // Alice is the demo organization's admin: her token (scope organization_manage) may export it.
  const exported = npmRun('organization-export', env);
  if (
    (await exported.exited) !== 0 ||
    !/^\d+ files, \d+ rows: every file matches the manifest$/m.test(exported.output())
  )
    fail(`npm run organization-export:\n${exported.output()}`);
  process.stdout.write(exported.output());
  const listed = execFileSync('tar', ['-tzf', env.PAYROLL_ARCHIVE], { encoding: 'utf8' }).trim().split('\n');
  const summarised = [...exported.output().matchAll(/^ {2}(\S+): \d+ rows/gm)].map((m) => m[1]);
  if (listed.join() !== ['manifest.json', ...summarised].join() || !summarised.includes('reported_drives.csv'))
    fail(`the archive holds ${listed.join(', ')}; the summary named ${summarised.join(', ')}`);
  process.stdout.write(
    'payroll-sync smoke: export twice (idempotent), a deletion applied by the next export, receiver applied a signed withdrawal, the organization export downloaded and checked: ok\n',
  );
} finally {
  drives.close();
  await stack.stop();
  rmSync(dir, { recursive: true, force: true });
}
