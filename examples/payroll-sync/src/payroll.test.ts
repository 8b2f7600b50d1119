// The payroll export against the real stack (tools/devstack's launchStack: embedded PostgreSQL, the services, the
// gateway and the development identity provider issuing real tokens): a full first run, an idempotent re-run, a
// changed and a new report picked up incrementally, and the command itself. Deletions and withdrawals through the
// change feed and webhook deliveries need the platform's change feed and webhooks service: their end-to-end tests
// come with those (this package's unit tests cover them against the contract server).
import { launchStack, type LaunchedStack } from '@mileage/devstack';
import { drivesV1 } from '@mileage/proto';
import { createGrpcClient, freePort, type PromiseClient } from '@mileage/runtime';
import { parse } from 'csv-parse/sync';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { createMileageClient, oauthToken, syncUserDrives, type SyncEvent } from '@mileage/client';
import { clientFor, loadConfig, type Config } from './config';
import { runExport } from './export';
import { PayrollStore, type Row } from './store';

let stack: LaunchedStack;
let drives: PromiseClient<drivesV1.DrivesServiceClient>;
let config: Config;
let dir: string;
let env: Record<string, string>;

before(async () => {
  const drivesPort = String(await freePort());
  stack = await launchStack({ env: { DRIVES_GRPC_PORT: drivesPort } });
  drives = createGrpcClient(drivesV1.DrivesServiceClient, `127.0.0.1:${drivesPort}`, { defaultDeadlineMs: 10_000 });
  dir = mkdtempSync(path.join(tmpdir(), 'payroll-it-'));
  env = {
    MILEAGE_API_URL: stack.gatewayUrl,
    MILEAGE_GROUP_ID: '1',
    MILEAGE_TOKEN_URL: `${stack.issuer}/protocol/openid-connect/token`,
    MILEAGE_CLIENT_ID: 'mileage-dev',
    MILEAGE_USERNAME: 'alice@example.com',
    MILEAGE_PASSWORD: 'demo',
    PAYROLL_CSV: path.join(dir, 'team-1.csv'),
  };
  config = loadConfig(env);
});
after(async () => {
  drives?.close();
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const store = () => new PayrollStore(config.PAYROLL_CSV, path.join(dir, 'team-1.state.json'), '1');
const csvRows = () => parse(readFileSync(config.PAYROLL_CSV, 'utf8'), { columns: true }) as Row[];

/** Every reported drive of group 1, read page by page with plain fetch (independently of the client package). */
async function allReportedIds(): Promise<string[]> {
  const tokenRes = await fetch(env.MILEAGE_TOKEN_URL!, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'password',
      client_id: 'mileage-dev',
      username: 'alice@example.com',
      password: 'demo',
      scope: 'groups_read_reported_drives',
    }),
  });
  const { access_token } = (await tokenRes.json()) as { access_token: string };
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const url = new URL(`${stack.gatewayUrl}/v1/groups/1/reported-drives`);
    url.searchParams.set('limit', '7');
    if (cursor) url.searchParams.set('cursor', cursor);
    const res = await fetch(url, { headers: { authorization: `Bearer ${access_token}` } });
    assert.equal(res.status, 200);
    const page = (await res.json()) as { results: { id: string }[]; next_cursor: string | null };
    ids.push(...page.results.map((r) => r.id));
    cursor = page.next_cursor;
  } while (cursor);
  return ids.sort((a, b) => Number(a) - Number(b));
}

test('the first run exports every reported drive of the team; a re-run with nothing new changes nothing', async () => {
  const first = await runExport(clientFor(config), store());
  assert.equal(first.full, true);
  const expected = await allReportedIds();
  assert.ok(expected.length >= 35, `demo data: at least 35 reports to group 1 (${expected.length})`);
  assert.equal(first.rows, expected.length);
  assert.deepEqual(
    csvRows().map((r) => r.drive_id),
    expected,
  );
  assert.ok(first.watermark && csvRows().every((r) => r.modified <= first.watermark!));
  assert.ok(csvRows().every((r) => r.driver_email.endsWith('@example.com') && /^\d+\.\d{2}$/.test(r.value)));

  const files = [config.PAYROLL_CSV, path.join(dir, 'team-1.state.json')];
  const before = files.map((f) => [readFileSync(f, 'utf8'), statSync(f).mtimeMs]);
  const second = await runExport(clientFor(config), store());
  assert.deepEqual(
    { full: second.full, upserts: second.upserts, deletes: second.deletes, changed: second.csvChanged },
    { full: false, upserts: 0, deletes: 0, changed: false },
  );
  assert.equal(second.watermark, first.watermark);
  assert.deepEqual(
    files.map((f) => [readFileSync(f, 'utf8'), statSync(f).mtimeMs]),
    before,
  );
});

test('a reviewed report and a new report arrive in the next incremental run; the other rows stay as they were', async () => {
  const previous = csvRows();
  const reviewed = previous.find((r) => r.status === 'submitted')!;
  await drives.reviewReportedDrive({
    driveId: Number(reviewed.drive_id),
    status: 'approved',
    comment: 'Approved for payroll.',
    reviewerEmail: 'alice@example.com',
  });
  // A new drive of Bob's, reported to the team.
  const { drives: bobs } = await drives.listUserDrives({
    userId: 'BobDriver1',
    cursor: '',
    limit: 1,
    classification: drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_BUSINESS,
    sortField: drivesV1.SortField.SORT_FIELD_MODIFIED,
  });
  const { drive: created } = await drives.createDrive({ drive: { ...bobs[0]!, id: 0 } });
  await drives.reportDrive({ driveId: created!.id, groupId: 1 });

  const run = await runExport(clientFor(config), store());
  assert.deepEqual(
    { full: run.full, upserts: run.upserts, deletes: run.deletes },
    { full: false, upserts: 2, deletes: 0 },
  );
  const now = csvRows();
  assert.equal(now.length, previous.length + 1);
  assert.equal(now.find((r) => r.drive_id === reviewed.drive_id)!.status, 'approved');
  assert.ok(now.some((r) => r.drive_id === String(created!.id)));
  const unchanged = (rows: Row[]) =>
    rows.filter((r) => r.drive_id !== reviewed.drive_id && r.drive_id !== String(created!.id));
  assert.deepEqual(unchanged(now), unchanged(previous));
  assert.deepEqual(
    await allReportedIds(),
    now.map((r) => r.drive_id),
  );
});

test('the command: `node dist/main.js export` with the environment, then again (unchanged); bad configuration is exit 78', async () => {
  const run = promisify(execFile);
  const main = path.join(__dirname, 'main.js');
  const again = await run(process.execPath, [main, 'export'], { env: { ...process.env, ...env } });
  assert.match(again.stdout, /incremental sync of group 1: 0 new or changed, 0 removed; \d+ rows in .* \(unchanged\)/);
  const bad = await run(process.execPath, [main, 'export'], {
    env: { ...process.env, ...env, MILEAGE_GROUP_ID: 'one', MILEAGE_PASSWORD: '' },
  }).catch((err: { code: number; stderr: string }) => err);
  assert.equal((bad as { code: number }).code, 78);
  assert.match((bad as { stderr: string }).stderr, /MILEAGE_GROUP_ID: a group id/);
  assert.match((bad as { stderr: string }).stderr, /MILEAGE_PASSWORD: required with MILEAGE_USERNAME/);
  assert.doesNotMatch((bad as { stderr: string }).stderr, /demo/);
});

test('syncUserDrives walks a driver’s own drives page by page on the real stack, then finds nothing new', async () => {
  const client = createMileageClient({
    baseUrl: stack.gatewayUrl,
    token: oauthToken({
      tokenUrl: env.MILEAGE_TOKEN_URL!,
      clientId: 'mileage-dev',
      grant: { grant_type: 'password', username: 'carol@example.com', password: 'demo' },
      scope: 'drives_read',
    }),
  });
  const events: SyncEvent<unknown, unknown>[] = [];
  for await (const e of syncUserDrives(client, 'CarolDrv01', { pageSize: 13 })) events.push(e);
  const done = events.at(-1)!;
  assert.equal(events[0]!.kind, 'reset');
  assert.ok(done.kind === 'complete' && done.upserts >= 60 && done.pages >= 5, JSON.stringify(done));
  const ids = events.flatMap((e) => (e.kind === 'upsert' ? [e.id] : []));
  assert.equal(new Set(ids).size, ids.length, 'no drive twice');
  const again: string[] = [];
  for await (const e of syncUserDrives(client, 'CarolDrv01', { state: done.kind === 'complete' ? done.state : null }))
    again.push(e.kind);
  assert.deepEqual(again, ['complete']);
});
