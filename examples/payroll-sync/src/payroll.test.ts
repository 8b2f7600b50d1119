// The payroll export against the real stack (tools/devstack's launchStack: embedded PostgreSQL, the services, the
// gateway and the development identity provider issuing real tokens): a full first run, an idempotent re-run, a
// changed and a new report picked up incrementally, a deleted drive and a withdrawn report leaving the CSV through the
// change feed's tombstones (and a drive deleted before it was ever synced never appearing), a watermark older than
// the tombstone retention answered 410 and rebuilt from a full walk, and the command itself; the organization export
// (CONTRACT §8) as an organization admin: requested, downloaded, checked against its manifest, a download an earlier
// run left unfinished continued rather than requested again, and refused to a driver. Webhook deliveries come with the
// webhooks service.
import { launchStack, type LaunchedStack } from '@mileage/devstack';
import { drivesV1 } from '@mileage/proto';
import {
  createGrpcClient,
  EndUserSigner,
  grpcTls,
  V1_AUDIENCE,
  type CallSettings,
  type PromiseClient,
} from '@mileage/runtime/grpc';
import { freePort } from '@mileage/runtime/config';
import { asOrganization } from '@mileage/runtime/testing';
import { parse } from 'csv-parse/sync';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import {
  createMileageClient,
  MileageApiError,
  oauthToken,
  syncReportedDrives,
  syncUserDrives,
  type ReportedDrive,
  type ReportedDriveTombstone,
  type SyncEvent,
  type SyncState,
} from '@mileage/client';
import { verifyArchive } from './archive';
import { clientFor, loadConfig, ORGANIZATION_EXPORT_SCOPE, tokenSource, type Config } from './config';
import { runExport } from './export';
import { partFileOf, runOrganizationExport } from './organization-export';
import { PayrollStore, type Row } from './store';

let stack: LaunchedStack;
let drives: PromiseClient<drivesV1.DrivesServiceClient>;
/** Reads of a user's drives, as the gateway makes them (the demo-data loader may write drives, not read them). */
let driveReads: PromiseClient<drivesV1.DrivesServiceClient>;
let asBob: CallSettings;
let config: Config;
let dir: string;
let env: Record<string, string>;

before(async () => {
  const drivesPort = String(await freePort());
  // A retention of one day (the smallest TOMBSTONE_RETENTION_DAYS): a watermark two days old is past it (410).
  stack = await launchStack({ env: { DRIVES_GRPC_PORT: drivesPort, TOMBSTONE_RETENTION_DAYS: '1' } });
  // The platform's own writes (a review, a deletion) on the demo organization's drives, over the stack's mutual TLS
  // as its demo-data loader (the one identity the drive writes admit); reads as the gateway.
  const client = (as: 'seed' | 'gateway') =>
    asOrganization(
      createGrpcClient(drivesV1.DrivesServiceClient, `127.0.0.1:${drivesPort}`, {
        defaultDeadlineMs: 10_000,
        credentials: grpcTls(stack.grpcConfig(as)).channelCredentials(),
      }),
      1,
    );
  drives = client('seed');
  driveReads = client('gateway');
  // A read of a user's drives acts for that user: the gateway's end-user context of Bob, signed with its key.
  const gateway = stack.grpcConfig('gateway');
  asBob = {
    endUser: new EndUserSigner(
      readFileSync(gateway.GRPC_TLS_CERT_FILE!),
      readFileSync(gateway.GRPC_TLS_KEY_FILE!),
    ).sign({
      sub: 'BobDriver1',
      org: 1,
      scopes: ['drives_read'],
      aud: [...V1_AUDIENCE],
    }),
  };
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
  driveReads?.close();
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
  const created = await reportNewDriveOfBob();

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

/** A new business drive of Bob's (a copy of his latest), reported to the team (group 1). */
async function reportNewDriveOfBob() {
  const { drives: bobs } = await driveReads.listUserDrives(
    {
      userId: 'BobDriver1',
      limit: 1,
      classification: drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_BUSINESS,
      sortField: drivesV1.SortField.SORT_FIELD_MODIFIED,
    },
    asBob,
  );
  const { drive } = await drives.createDrive({ drive: { ...bobs[0]!, id: 0 } });
  await drives.reportDrive({ driveId: drive!.id, groupId: 1 });
  return drive;
}

/** Every event of one walk of group 1's reported drives from `state` (the export's own walk, replayed). */
async function walkEvents(state: SyncState | null) {
  const events: SyncEvent<ReportedDrive, ReportedDriveTombstone>[] = [];
  for await (const e of syncReportedDrives(clientFor(config), '1', { state, includeDeleted: true, pageSize: 9 }))
    events.push(e);
  return events;
}

test('a deleted drive and a withdrawn report leave the CSV in the next incremental run as tombstones; a drive deleted before it was ever synced never appears', async () => {
  const previous = csvRows();
  const watermark = store().syncState.watermark;
  assert.ok(watermark);
  // Bob deletes one of his reported drives (which withdraws its report), Carol withdraws a report (the drive stays).
  const deleted = previous.find((r) => r.driver_id === 'BobDriver1')!;
  const withdrawn = previous.find((r) => r.driver_id === 'CarolDrv01')!;
  const del = await drives.deleteDrive({ driveId: Number(deleted.drive_id), userId: 'BobDriver1' });
  assert.equal(del.withdrawnGroupId, 1);
  const wd = await drives.withdrawReport({ driveId: Number(withdrawn.drive_id), userId: 'CarolDrv01' });
  assert.equal(wd.tombstone!.groupId, 1);
  // A drive of Bob's reported to the team and deleted before any export saw it.
  const ephemeral = await reportNewDriveOfBob();
  assert.equal((await drives.deleteDrive({ driveId: ephemeral!.id, userId: 'BobDriver1' })).withdrawnGroupId, 1);
  const gone = [deleted.drive_id, withdrawn.drive_id, String(ephemeral!.id)];

  // The walk the next run makes, from the stored watermark: three tombstones, nothing live.
  const events = await walkEvents({ version: 1, watermark });
  assert.deepEqual(
    events.flatMap((e) => (e.kind === 'complete' ? [] : [[e.kind, 'id' in e ? e.id : '']])).sort(),
    gone.map((id) => ['delete', id]).sort(),
  );
  for (const e of events)
    if (e.kind === 'delete') assert.deepEqual(e.tombstone, { id: e.id, deleted: true, modified: e.modified });

  const run = await runExport(clientFor(config), store());
  assert.deepEqual(
    { full: run.full, upserts: run.upserts, deletes: run.deletes, changed: run.csvChanged },
    { full: false, upserts: 0, deletes: 3, changed: true },
  );
  assert.ok(run.watermark! > watermark);
  const now = csvRows();
  assert.equal(now.length, previous.length - 2);
  for (const id of gone) assert.ok(!now.some((r) => r.drive_id === id), `drive ${id} is not in the CSV`);
  assert.deepEqual(
    now,
    previous.filter((r) => !gone.includes(r.drive_id)),
  );
  assert.deepEqual(
    await allReportedIds(),
    now.map((r) => r.drive_id),
  );
  // And the run after that has nothing to do: the tombstones are behind the watermark.
  const again = await runExport(clientFor(config), store());
  assert.deepEqual(
    { full: again.full, upserts: again.upserts, deletes: again.deletes },
    { full: false, upserts: 0, deletes: 0 },
  );
});

test('a watermark older than the tombstone retention: 410, a full walk, and the CSV rebuilt exactly as a fresh export', async () => {
  // The stored state as a job that last ran three days ago would have it (the retention is one day): its watermark is
  // older than the window, and its copy has a row whose drive was deleted since (that tombstone may have been purged)
  // and a row with an outdated status.
  const stateFile = path.join(dir, 'team-1.state.json');
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as { sync: SyncState; rows: Record<string, Row> };
  const old = new Date(Date.now() - 3 * 86_400_000).toISOString();
  const rows = Object.values(state.rows);
  const stale = { ...rows[0]!, drive_id: '999999', modified: old };
  state.rows[stale.drive_id] = stale;
  const changed = rows[1]!;
  state.rows[changed.drive_id] = { ...changed, status: changed.status === 'approved' ? 'rejected' : 'approved' };
  state.sync = { version: 1, watermark: old };
  writeFileSync(stateFile, `${JSON.stringify(state, null, 1)}\n`);

  // The walk from that watermark: the platform answers 410, the client starts over as a full walk.
  const events = await walkEvents({ version: 1, watermark: old });
  const first = events[0]!;
  assert.ok(first.kind === 'reset' && first.reason === 'resync-required', JSON.stringify(first));
  assert.match(first.detail ?? '', /full sync/i);
  assert.ok(!events.some((e) => e.kind === 'reset' && e !== first), 'one reset');
  const done = events.at(-1)!;
  assert.ok(done.kind === 'complete' && done.full);

  const run = await runExport(clientFor(config), store());
  assert.equal(run.full, true);
  const rebuilt = readFileSync(config.PAYROLL_CSV, 'utf8');
  assert.ok(!csvRows().some((r) => r.drive_id === '999999'));

  // A fresh export into another file: the same bytes.
  const freshCsv = path.join(dir, 'fresh.csv');
  const fresh = await runExport(clientFor(config), new PayrollStore(freshCsv, path.join(dir, 'fresh.state.json'), '1'));
  assert.equal(fresh.full, true);
  assert.equal(rebuilt, readFileSync(freshCsv, 'utf8'));
  assert.equal(run.rows, fresh.rows);
  assert.equal(run.watermark, fresh.watermark);
  assert.deepEqual(
    csvRows().map((r) => r.drive_id),
    await allReportedIds(),
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

/** The organization export as `config`'s user (an organization admin: Alice), looking at the job every 100 ms. */
function exportAs(c: Config, file: string) {
  const token = tokenSource(c, ORGANIZATION_EXPORT_SCOPE);
  return runOrganizationExport(clientFor(c, token), file, { baseUrl: c.MILEAGE_API_URL, token, intervalMs: 100 });
}
const exportIds = async () => {
  const { data } = await clientFor(config, tokenSource(config, ORGANIZATION_EXPORT_SCOPE)).GET(
    '/v1/organization/exports',
  );
  return data!.results.map((e) => e.id);
};

test('the command `organization-export`: the organization admin’s archive, downloaded, checked against its manifest, summarised; no group needed', async () => {
  const run = promisify(execFile);
  const file = path.join(dir, 'organization.tar.gz');
  const { MILEAGE_GROUP_ID: _team, ...withoutTeam } = env;
  const { stdout } = await run(process.execPath, [path.join(__dirname, 'main.js'), 'organization-export'], {
    env: { ...process.env, ...withoutTeam, PAYROLL_ARCHIVE: file },
  });
  assert.match(stdout, /^export [0-9a-f-]{36}: (queued|running|completed)/m);
  assert.match(stdout, /^organization 1 \(Demo Org\) as of \S+: .*organization\.tar\.gz$/m);
  assert.match(stdout, /^ {2}users\.jsonl: \d+ rows, \d+ bytes, SHA-256 matches the manifest$/m);
  assert.match(stdout, /^\d+ files, \d+ rows: every file matches the manifest$/m);
  // What it printed is what the archive holds: an independent read of it agrees, and nothing is left beside it.
  const verified = await verifyArchive(file);
  assert.deepEqual(verified.manifest.files.map((f) => f.name).sort(), [
    'groups.jsonl',
    'provisioning_events.jsonl',
    'reported_drives.csv',
    'reported_drives.jsonl',
    'scim_tokens.jsonl',
    'users.jsonl',
    'webhooks.jsonl',
  ]);
  for (const f of verified.files) assert.ok(stdout.includes(`  ${f.name}: ${f.rows} rows, ${f.bytes} bytes`), f.name);
  assert.ok(verified.files.find((f) => f.name === 'users.jsonl')!.rows >= 3);
  assert.deepEqual(
    readdirSync(dir).filter((name) => name.startsWith('organization.tar.gz')),
    ['organization.tar.gz'],
  );
  // export and receive still need their team.
  const noTeam = await run(process.execPath, [path.join(__dirname, 'main.js'), 'export'], {
    env: { ...process.env, ...withoutTeam },
  }).catch((err: { code: number; stderr: string }) => err);
  assert.equal((noTeam as { code: number }).code, 78);
  assert.match((noTeam as { stderr: string }).stderr, /MILEAGE_GROUP_ID: required by export/);
});

test('a download an earlier run left unfinished (or whole but unchecked) is continued with Range: no new export is requested', async () => {
  const first = await exportAs(config, path.join(dir, 'first.tar.gz'));
  assert.equal(first.resumed, false);
  const archive = readFileSync(first.file);
  assert.equal(archive.length, first.sizeBytes);
  const requested = await exportIds();

  // A run stopped a third of the way into the download; then one stopped after the last byte, before the check.
  for (const kept of [Math.floor(archive.length / 3), archive.length]) {
    const file = path.join(dir, `again-${kept}.tar.gz`);
    writeFileSync(partFileOf(file, first.id), archive.subarray(0, kept));
    const again = await exportAs(config, file);
    assert.deepEqual({ id: again.id, resumed: again.resumed }, { id: first.id, resumed: true });
    assert.ok(readFileSync(file).equals(archive));
    assert.equal(again.sha256, first.sha256);
    assert.ok(!existsSync(partFileOf(file, first.id)));
  }
  assert.deepEqual(await exportIds(), requested, 'no export was requested');
});

test('a driver (no organization admin) is refused the organization export: 403, nothing written', async () => {
  const file = path.join(dir, 'carol.tar.gz');
  const carol = loadConfig({ ...env, MILEAGE_USERNAME: 'carol@example.com' });
  const err = await exportAs(carol, file).then(
    () => assert.fail('a driver exported the organization'),
    (e: Error) => e,
  );
  assert.ok(err instanceof MileageApiError && err.status === 403, String(err));
  assert.ok(!readdirSync(dir).some((name) => name.startsWith('carol.tar.gz')));
});
