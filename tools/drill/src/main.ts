// `npm run drill:restore`: the point-in-time restore drill (docs/operations.md, "Backups and restore"). The stack on
// a real PostgreSQL 18 that archives its WAL continuously, a base backup, load through the platform's APIs with every
// acknowledged write's time recorded, then a recovery to a time T into a new data folder with the whole stack started
// on it, and the verdict: nothing acknowledged before T lost, nothing sent after T back, every service ready, the
// migrations as they were, the acceptance suite green, sync cursors and webhook ids right across the restore. Prints
// the RPO and RTO. `--smoke` (CI): a small database; `--drives N`: the database's size.
import { createMileageClient, syncReportedDrives, type SyncEvent } from '@mileage/client';
import {
  DEMO_PASSWORD,
  DEMO_SCIM_CLIENTS,
  developmentGrpcConfig,
  generateVolume,
  launchStack,
  passwordToken,
  scimClientToken,
  startPostgres,
  type LaunchedStack,
  type RunningPostgres,
} from '@mileage/devstack';
import { drivesV1 } from '@mileage/proto';
import { createGrpcClient, grpcTls, type GrpcTlsConfig, type PromiseClient } from '@mileage/runtime/grpc';
import { freePort } from '@mileage/runtime/config';
import { millisToTimestamp } from '@mileage/runtime/formats';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { lsnToBigInt, RestoreRefused, segmentEndLsn, WalArchive } from './archive';
import { ExposureMeter, judge, type LedgerEntry } from './verdict';

/**
 * archive_timeout at its production value (docs/operations.md): a segment is archived at least this often while
 * anything is written, which bounds the RPO of losing the whole data folder at this plus the time to copy a segment.
 */
export const ARCHIVE_TIMEOUT_SECONDS = 60;

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    drives: { type: 'string' },
    /** How long the load runs; T is its middle. At least archive_timeout, so that the RPO meets a timeout. */
    'load-seconds': { type: 'string' },
    /** Keep the work folder (data folders, the repository, logs) for a look after the run. */
    keep: { type: 'boolean', default: false },
  },
});
const DRIVES = Number(values.drives ?? (values.smoke ? 2_000 : 100_000));
const LOAD_SECONDS = Number(values['load-seconds'] ?? ARCHIVE_TIMEOUT_SECONDS + 15);
/** The receiver answers each delivery this late: deliveries of events made just before T complete after it. */
const DELIVERY_DELAY_MS = 500;
const SCOPES = 'users_read drives_read groups_read groups_read_reported_drives webhooks_manage';
const SCIM_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
/** Demo Org's first group, administered by Alice; Bob drives for it (tools/devstack/src/demo-data.ts). */
const GROUP = 1;
const ADMIN = 'alice@example.com';
const DRIVER = 'BobDriver1';

const log = (message: string) => process.stdout.write(`drill: ${message}\n`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}
const checks: Check[] = [];
const check = (name: string, ok: boolean, detail: string) => {
  checks.push({ name, ok, detail });
  log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
};

async function main(): Promise<void> {
  if (!(DRIVES >= 0) || !(LOAD_SECONDS >= 10)) throw new Error('--drives must be a number, --load-seconds at least 10');
  const work = mkdtempSync(path.join(tmpdir(), 'mileage-drill-'));
  chmodSync(work, 0o755);
  const cleanups: (() => Promise<unknown>)[] = [];
  const cleanUp = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
    if (values.keep) log(`kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  };
  // Ctrl-C: the stacks (their own process groups) and the servers are stopped, not left behind.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void cleanUp().finally(() => process.exit(130)));
  try {
    await drill(work, cleanups);
  } finally {
    await cleanUp();
  }
  const failed = checks.filter((c) => !c.ok);
  log(failed.length ? `FAILED: ${failed.map((c) => c.name).join(', ')}` : `all ${checks.length} checks passed`);
  process.exit(failed.length ? 1 : 0);
}

async function drill(work: string, cleanups: (() => Promise<unknown>)[]): Promise<void> {
  const archive = new WalArchive(path.join(work, 'repository'));
  const archiving = {
    archive_mode: 'on',
    archive_command: archive.archiveCommand(),
    archive_timeout: String(ARCHIVE_TIMEOUT_SECONDS),
    wal_level: 'replica',
  };
  const password = randomBytes(12).toString('base64url');
  const postgresLines: string[] = [];
  const primary = await startPostgres({
    dir: path.join(work, 'primary'),
    port: await freePort(),
    password,
    persistent: true,
    settings: archiving,
    log,
    onPostgresError: (line) => postgresLines.push(line),
  });
  cleanups.push(() => primary.stop());
  // The stack's own folder (secrets, the identity provider's keys) is kept across the restore, as an installation's
  // Secrets are; the ports the clients know too.
  const stackDir = path.join(work, 'stack');
  const ports = {
    GATEWAY_PORT: String(await freePort()),
    DEV_IDP_PORT: String(await freePort()),
    DRIVES_GRPC_PORT: String(await freePort()),
  };
  const startStack = (adminUrl: string) =>
    launchStack({ env: { DATABASE_URL: adminUrl, DATA_DIR: stackDir, ...ports } });

  let t = Date.now();
  const before = await startStack(primary.adminUrl);
  log(`stack up on the archiving server in ${seconds(Date.now() - t)}`);
  let stackStopped = false;
  cleanups.push(async () => stackStopped || before.stop());
  t = Date.now();
  const admin = new pg.Client({ connectionString: primary.adminUrl });
  await admin.connect();
  const volume = await generateVolume(admin, { users: Math.max(100, Math.ceil(DRIVES / 100)), drives: DRIVES });
  await admin.query('VACUUM ANALYZE');
  await admin.end();
  log(`volume: ${JSON.stringify(volume)} in ${seconds(Date.now() - t)}`);

  t = Date.now();
  const backup = await archive.backup(primary.adminUrl, primary.dataDir);
  log(`base backup ${backup.label}: ${Object.keys(backup.files).length} files in ${seconds(Date.now() - t)}`);
  const checked = await archive.check(primary.adminUrl);
  check('archive check', true, `segment ${checked} reached the repository after a switch`);
  await archiveUnreachable(archive, primary.adminUrl);

  // The load, T in its middle.
  const receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  const ledger: LedgerEntry[] = [];
  const lsnPool = new pg.Pool({ connectionString: primary.adminUrl, max: 2 });
  // An idle connection ended by the server's shutdown is no error of the drill's.
  lsnPool.on('error', () => {});
  const load = await startLoad(
    before,
    `127.0.0.1:${ports.DRIVES_GRPC_PORT}`,
    developmentGrpcConfig(path.join(stackDir, 'grpc-pki'), 'seed'),
    ledger,
    lsnPool,
    receiver.url,
  );
  const loadStart = Date.now();
  const target = loadStart + (LOAD_SECONDS * 1000) / 2;
  const meter = new ExposureMeter(ledger);
  const cursorBefore = await waitUntil(loadStart + 5_000).then(() => load.cursor());
  await waitUntil(target);
  log(`T = ${new Date(target).toISOString()}`);
  await waitUntil(loadStart + LOAD_SECONDS * 1000 - 5_000, async () => {
    const { rows } = await lsnPool.query<{ wal: string | null }>(
      'SELECT last_archived_wal AS wal FROM pg_stat_archiver',
    );
    const wal = rows[0]!.wal;
    meter.sample(Date.now(), wal && /^[0-9A-F]{24}$/.test(wal) ? segmentEndLsn(wal) : 0n);
  });
  const cursorAfter = await load.cursor();
  // A sync in progress: its first page read after T, the rest to follow after the restore.
  const syncing = await load.startSync();
  await waitUntil(loadStart + LOAD_SECONDS * 1000);
  await load.stop();
  log(`load: ${ledger.length} acknowledged writes in ${seconds(Date.now() - loadStart)}, ${load.errors()} failed`);
  check(
    'RPO',
    meter.rpoMs <= (ARCHIVE_TIMEOUT_SECONDS + 15) * 1000,
    `${seconds(meter.rpoMs)} (archive_timeout ${ARCHIVE_TIMEOUT_SECONDS} s; ${meter.sampleCount} samples)`,
  );
  const deliveredBefore = new Map(receiver.received.map((d) => [d.id, d.body]));

  // The loss. The server is alive (an operator's DELETE, a bad migration): what it wrote is archived, then it goes.
  const migrationsBefore = await migrations(primary.adminUrl);
  await before.stop();
  stackStopped = true;
  await archive.check(primary.adminUrl);
  await lsnPool.end();
  await primary.stop();
  const stoppedAt = Date.now();
  const verified = await archive.verify();
  check(
    'repository verify',
    verified.problems.length === 0,
    `${verified.backups} backup(s), ${verified.files} files, ${verified.segments} WAL segments${verified.problems.length ? `: ${verified.problems.join('; ')}` : ''}`,
  );

  await refusedTargets(archive, work, backup.stopTime, stoppedAt, password);

  // The restore: recovery into a new data folder, then the whole stack on it.
  const rtoStart = Date.now();
  const restoredDir = path.join(work, 'restored');
  const restored = await recover(archive, new Date(target), restoredDir, password, archiving);
  cleanups.push(() => restored.stop());
  const recoveredAt = Date.now();
  const after = await startStack(restored.adminUrl);
  cleanups.push(() => after.stop());
  const rto = Date.now() - rtoStart;
  check(
    'RTO',
    rto <= 5 * 60_000,
    `${seconds(rto)} (recovery ${seconds(recoveredAt - rtoStart)}, stack ${seconds(Date.now() - recoveredAt)})`,
  );
  const ready = await fetch(`${after.gatewayUrl}/readyz`);
  check('every service ready', ready.ok, `GET /readyz ${ready.status}`);

  const db = new pg.Client({ connectionString: restored.adminUrl });
  await db.connect();
  cleanups.push(() => db.end());
  const { rows: timeline } = await db.query<{ timeline: string; recovery: boolean }>(
    `SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int AS timeline,
            pg_is_in_recovery() AS recovery`,
  );
  check(
    'recovered and promoted',
    !timeline[0]!.recovery && Number(timeline[0]!.timeline) > backup.timeline,
    `timeline ${timeline[0]!.timeline}`,
  );
  const present = await presence(db, ledger);
  const verdict = judge(ledger, target, (e) => present.has(`${e.kind} ${e.key}`));
  check(
    'writes acknowledged before T kept',
    verdict.lost.length === 0 && verdict.before > 0,
    `${verdict.before - verdict.lost.length} of ${verdict.before}${
      verdict.lost.length
        ? `; lost: ${verdict.lost
            .slice(0, 5)
            .map((e) => `${e.kind} ${e.key}`)
            .join(', ')}`
        : ''
    }`,
  );
  check(
    'writes sent after T absent',
    verdict.resurrected.length === 0 && verdict.after > 0,
    `${verdict.after - verdict.resurrected.length} of ${verdict.after} absent; ${verdict.straddling} spanned T (either is right)`,
  );
  const migrationsAfter = await migrations(restored.adminUrl);
  check(
    'migrations consistent',
    JSON.stringify(migrationsAfter) === JSON.stringify(migrationsBefore),
    Object.entries(migrationsAfter)
      .map(([schema, names]) => `${schema} ${names.length}`)
      .join(', '),
  );

  // Sync clients: told, not skipped (CONTRACT §8).
  const alice = await passwordToken(after.issuer, { username: ADMIN, password: DEMO_PASSWORD, scope: SCOPES });
  const early = await fetch(
    `${after.gatewayUrl}/v1/groups/${GROUP}/reported-drives?limit=2&cursor=${encodeURIComponent(cursorBefore)}`,
    {
      headers: { authorization: `Bearer ${alice}` },
    },
  );
  check('a cursor from before T goes on', early.status === 200, `status ${early.status}`);
  const late = await fetch(
    `${after.gatewayUrl}/v1/groups/${GROUP}/reported-drives?limit=2&cursor=${encodeURIComponent(cursorAfter)}`,
    {
      headers: { authorization: `Bearer ${alice}` },
    },
  );
  const lateBody = (await late.json()) as { type?: string };
  check(
    'a cursor from after T answers 410 resync-required',
    late.status === 410 && lateBody.type === '/errors/resync-required',
    `status ${late.status}, type ${lateBody.type}`,
  );
  const resumed = await syncing.finish();
  check(
    'the typed client resyncs across the restore',
    resumed.reset && resumed.complete?.full === true,
    `${resumed.reset ? 'reset (resync-required)' : 'no reset'}, ${
      resumed.complete
        ? `a ${resumed.complete.full ? 'full' : 'partial'} walk of ${resumed.complete.upserts} reported drives`
        : 'the walk did not complete'
    }`,
  );

  // Webhooks: deliveries the restored database had not recorded go out again, under the same webhook-id.
  await waitForDeliveries(db);
  const again = receiver.received.filter((d) => d.at > recoveredAt && deliveredBefore.has(d.id));
  const changed = again.filter((d) => deliveredBefore.get(d.id) !== d.body);
  check(
    'a webhook event sent again keeps its webhook-id',
    again.length > 0 && changed.length === 0,
    `${again.length} event(s) sent again after the restore with the id and body of their first delivery${changed.length ? `; ${changed.length} changed` : ''}`,
  );

  const acceptance = await runAcceptance(after);
  check('acceptance suite', acceptance.ok, acceptance.summary);
  log(
    `RPO ${seconds(meter.rpoMs)} (archive_timeout ${ARCHIVE_TIMEOUT_SECONDS} s), RTO ${seconds(rto)} at ${DRIVES} drives` +
      ` (${Object.keys(backup.files).length} files in the base backup)`,
  );
  if (postgresLines.some((l) => /PANIC/.test(l)))
    check('no PANIC', false, postgresLines.filter((l) => /PANIC/.test(l)).join(' / '));
}

/**
 * Recovery to `target` into `dir`: the backup copied, PostgreSQL started in recovery (no connections until it has
 * ended) and promoted at the target. When recovery fails (the target is past the archive's end, a segment is
 * missing), PostgreSQL's reason is the error and the half-restored folder is renamed `<dir>.failed`: nothing starts
 * on it.
 */
async function recover(
  archive: WalArchive,
  target: Date,
  dir: string,
  password: string,
  archiving: Record<string, string>,
): Promise<RunningPostgres> {
  const { settings } = archive.prepareRestore(target, path.join(dir, 'postgres'));
  try {
    return await startPostgres({
      dir,
      port: await freePort(),
      password,
      persistent: true,
      // The restored server archives its own timeline into the same repository.
      settings: { ...archiving, ...settings },
      log,
    });
  } catch (err) {
    renameSync(dir, `${dir}.failed`);
    throw new Error(`recovery to ${target.toISOString()} failed, nothing was started on it (${String(err)})`);
  }
}

/** Targets a restore must refuse: before the first backup and in the future (nothing copied), past the archive's end. */
async function refusedTargets(
  archive: WalArchive,
  work: string,
  backupEnd: string,
  stoppedAt: number,
  password: string,
): Promise<void> {
  const attempt = (target: Date, into: string) =>
    recover(archive, target, path.join(work, into), password, {}).then(
      async (server) => {
        await server.stop();
        return 'started';
      },
      (err: Error) => err.message,
    );
  const early = await attempt(new Date(Date.parse(backupEnd) - 60_000), 'too-early');
  check('a target before the first backup is refused', /before the first backup/.test(early), early);
  const future = await attempt(new Date(Date.now() + 3_600_000), 'future');
  check('a target in the future is refused', /in the future/.test(future), future);
  // Past the newest archived commit (every commit came before the server stopped; the target is after that, and in the
  // past by now): PostgreSQL replays everything, does not reach the target, and stops.
  const past = await attempt(new Date(stoppedAt + 1), 'past-the-end');
  check(
    'a target past the archive is refused, nothing started',
    /recovery ended before configured recovery target was reached/.test(past),
    past,
  );
}

/**
 * The archive destination unreachable for a while: the failure shows in pg_stat_archiver (what an alert reads) while
 * the segments wait in pg_wal, and once it is back every one of them is archived (repository verify finds no gap).
 */
async function archiveUnreachable(archive: WalArchive, adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const failed = async () =>
      Number((await client.query<{ n: string }>('SELECT failed_count AS n FROM pg_stat_archiver')).rows[0]!.n);
    const failuresBefore = await failed();
    chmodSync(archive.walDir, 0o500);
    await client.query(`SELECT pg_logical_emit_message(false, 'mileage-drill', 'unreachable archive')`);
    await client.query('SELECT pg_switch_wal()');
    await waitUntilTrue(async () => (await failed()) > failuresBefore, 30_000, 'the archiver reporting the failure');
    const { rows } = await client.query<{ ready: string; last_failed_wal: string }>(
      `SELECT (SELECT count(*) FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready') AS ready,
              last_failed_wal FROM pg_stat_archiver`,
    );
    chmodSync(archive.walDir, 0o700);
    const caughtUp = await archive.check(adminUrl);
    check(
      'archive destination unreachable: visible, then caught up',
      true,
      `pg_stat_archiver.failed_count rose, last_failed_wal ${rows[0]!.last_failed_wal}, ${rows[0]!.ready} segment(s) waiting in pg_wal; archived through ${caughtUp} once reachable`,
    );
  } finally {
    chmodSync(archive.walDir, 0o700);
    await client.end();
  }
}

interface Load {
  /** A raw next_cursor of the group's reported drives, read now. */
  cursor(): Promise<string>;
  /** A typed-client sync whose first page is read now; finish() walks the rest (after the restore). */
  startSync(): Promise<{
    finish(): Promise<{ reset: boolean; complete?: Extract<SyncEvent<unknown, unknown>, { kind: 'complete' }> }>;
  }>;
  stop(): Promise<void>;
  errors(): number;
}

/**
 * Writes through the platform until stopped, each acknowledged write in the ledger: SCIM creates and patches, drives
 * reported to the group and reviewed with a comment (the Drives service's writes, as the back office makes them: the
 * public API has none), webhook subscriptions; the subscription to the receiver makes deliveries.
 */
async function startLoad(
  stack: LaunchedStack,
  drivesAddress: string,
  /** The demo-data loader's certificate of the stack's development PKI (the Drives service's writes allow it). */
  seedGrpc: GrpcTlsConfig,
  ledger: LedgerEntry[],
  lsnPool: pg.Pool,
  receiverUrl: string,
): Promise<Load> {
  const scim = await scimClientToken(stack.issuer, DEMO_SCIM_CLIENTS.demo.secret);
  const alice = await passwordToken(stack.issuer, { username: ADMIN, password: DEMO_PASSWORD, scope: SCOPES });
  const drives: PromiseClient<drivesV1.DrivesServiceClient> = createGrpcClient(
    drivesV1.DrivesServiceClient,
    drivesAddress,
    { defaultDeadlineMs: 10_000, credentials: grpcTls(seedGrpc).channelCredentials() },
  );
  let stopping = false;
  let failures = 0;
  const record = async (kind: LedgerEntry['kind'], key: string, sentAt: number) => {
    const ackedAt = Date.now();
    const { rows } = await lsnPool.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
    ledger.push({ kind, key, sentAt, ackedAt, lsn: lsnToBigInt(rows[0]!.lsn) });
  };
  const http = async (method: string, url: string, token: string, body?: unknown, type = 'application/json') => {
    const res = await fetch(`${stack.gatewayUrl}${url}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': type } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 200)}`);
    return JSON.parse(text || '{}') as Record<string, unknown>;
  };
  /** Runs `step` until stopped, at most one every `paceMs` (within the SCIM client's 1,200 requests a minute). */
  const loop = async (paceMs: number, step: (n: number) => Promise<void>) => {
    for (let n = 0; !stopping; n++) {
      const next = Date.now() + paceMs;
      try {
        await step(n);
        await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
      } catch (err) {
        failures++;
        if (failures <= 5) log(`load: ${String(err)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  };
  const run = Date.now().toString(36);
  const scimLoop = loop(150, async (n) => {
    let sentAt = Date.now();
    const user = await http(
      'POST',
      '/scim/v2/Users',
      scim,
      {
        schemas: [SCIM_USER],
        userName: `drill-${run}-${n}@example.com`,
        name: { givenName: 'Drill', familyName: `User ${n}` },
        emails: [{ value: `drill-${run}-${n}@example.com`, type: 'work', primary: true }],
        active: true,
      },
      'application/scim+json',
    );
    await record('scim-user', String(user.id), sentAt);
    sentAt = Date.now();
    const value = `Drill patched ${n}`;
    await http(
      'PATCH',
      `/scim/v2/Users/${String(user.id)}`,
      scim,
      { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value }] },
      'application/scim+json',
    );
    await record('scim-patch', `${String(user.id)} ${value}`, sentAt);
  });
  const call = { organizationId: 1 };
  const drivesLoop = loop(50, async (n) => {
    let sentAt = Date.now();
    const start = Date.now() - 3_600_000;
    const { drive } = await drives.createDrive(
      {
        drive: {
          id: 0,
          userId: DRIVER,
          startTime: millisToTimestamp(start),
          endTime: millisToTimestamp(start + 1_800_000),
          classification: drivesV1.Classification.CLASSIFICATION_BUSINESS,
          entry: drivesV1.Entry.ENTRY_MANUAL,
          organizationId: 0,
          purpose: `drill ${n}`,
        },
      },
      call,
    );
    await record('drive', String(drive!.id), sentAt);
    sentAt = Date.now();
    await drives.reportDrive({ driveId: drive!.id, groupId: GROUP }, call);
    await record('report', String(drive!.id), sentAt);
    sentAt = Date.now();
    const comment = `drill review ${run} ${n}`;
    await drives.reviewReportedDrive({ driveId: drive!.id, status: 'approved', comment, reviewerEmail: ADMIN }, call);
    await record('review', `${drive!.id} ${comment}`, sentAt);
  });
  const subscribe = async (url: string, events: string[]) => {
    const sentAt = Date.now();
    const created = await http('POST', `/v1/groups/${GROUP}/webhooks`, alice, { url, events });
    await record('webhook', String(created.id), sentAt);
  };
  // One subscription makes the deliveries (a report each); the later ones are writes that add none.
  await subscribe(receiverUrl, ['drive.reported']);
  const webhooksLoop = loop(10_000, async (n) => {
    await subscribe(`${receiverUrl}/other-${n}`, ['drive.report_withdrawn']);
  });
  const page = async (gateway: string, token: string) => {
    const body = (await (
      await fetch(`${gateway}/v1/groups/${GROUP}/reported-drives?limit=2`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).json()) as { next_cursor?: string };
    if (!body.next_cursor) throw new Error(`no next_cursor: ${JSON.stringify(body).slice(0, 200)}`);
    return body.next_cursor;
  };
  return {
    cursor: () => page(stack.gatewayUrl, alice),
    startSync: async () => {
      // The same gateway address after the restore: the client does not know a restore happened.
      const client = createMileageClient({
        baseUrl: stack.gatewayUrl,
        token: () => passwordToken(stack.issuer, { username: ADMIN, password: DEMO_PASSWORD, scope: SCOPES }),
      });
      const events = syncReportedDrives(client, GROUP, { pageSize: 5, state: { version: 1, watermark: null } });
      // The first page: the initial reset and its five items.
      for (let seen = 0; seen < 6; seen++) await events.next();
      return {
        finish: async () => {
          let reset = false;
          for await (const event of events) {
            if (event.kind === 'reset' && event.reason === 'resync-required') reset = true;
            if (event.kind === 'complete') return { reset, complete: event };
          }
          return { reset };
        },
      };
    },
    stop: async () => {
      stopping = true;
      await Promise.all([scimLoop, drivesLoop, webhooksLoop]);
      drives.close();
    },
    errors: () => failures,
  };
}

/** Which ledger entries the restored database holds (as `<kind> <key>`). */
async function presence(db: pg.Client, ledger: readonly LedgerEntry[]): Promise<Set<string>> {
  const held = new Set<string>();
  const keys = (kind: LedgerEntry['kind']) => ledger.filter((e) => e.kind === kind).map((e) => e.key);
  const add = (kind: string, rows: { key: string }[]) => rows.forEach((r) => held.add(`${kind} ${r.key}`));
  const q = async (sql: string, values: unknown[]) => (await db.query<{ key: string }>(sql, values)).rows;
  add('scim-user', await q('SELECT id AS key FROM users.users WHERE id = ANY($1)', [keys('scim-user')]));
  add(
    'scim-patch',
    await q(`SELECT id || ' ' || display_name AS key FROM users.users WHERE id || ' ' || display_name = ANY($1)`, [
      keys('scim-patch'),
    ]),
  );
  add('drive', await q('SELECT id::text AS key FROM drives.drives WHERE id::text = ANY($1)', [keys('drive')]));
  add(
    'report',
    await q('SELECT drive_id::text AS key FROM drives.drive_reports WHERE drive_id::text = ANY($1)', [keys('report')]),
  );
  add(
    'review',
    await q(
      `SELECT drive_id || ' ' || text AS key FROM drives.review_comments WHERE drive_id || ' ' || text = ANY($1)`,
      [keys('review')],
    ),
  );
  add(
    'webhook',
    await q('SELECT id::text AS key FROM webhooks.subscriptions WHERE id::text = ANY($1)', [keys('webhook')]),
  );
  return held;
}

/** Every applied migration of every schema, by schema (the expand and the contract phases). */
async function migrations(adminUrl: string): Promise<Record<string, string[]>> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ schema: string; name: string }>(
      `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
        WHERE table_name IN ('knex_migrations', 'knex_migrations_contract') ORDER BY 1, 2`,
    );
    const result: Record<string, string[]> = {};
    for (const { schema, name } of rows) {
      const applied = await client.query<{ name: string }>(
        `SELECT name FROM ${client.escapeIdentifier(schema)}.${name} ORDER BY name`,
      );
      (result[schema] ??= []).push(...applied.rows.map((r) => `${name}:${r.name}`));
    }
    return result;
  } finally {
    await client.end();
  }
}

/** Until the restored database has no delivery left to make (those it had not recorded are made again). */
async function waitForDeliveries(db: pg.Client): Promise<void> {
  await waitUntilTrue(
    async () =>
      Number(
        (await db.query<{ n: string }>(`SELECT count(*) AS n FROM webhooks.deliveries WHERE status = 'pending'`))
          .rows[0]!.n,
      ) === 0,
    180_000,
    'the deliveries pending at T',
  );
}

interface Delivery {
  id: string;
  body: string;
  at: number;
}

/** A webhook receiver on loopback that answers every delivery DELIVERY_DELAY_MS late and keeps what it got. */
async function startReceiver(): Promise<{ url: string; received: Delivery[]; close(): Promise<void> }> {
  const received: Delivery[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ id: String(req.headers['webhook-id']), body, at: Date.now() });
      setTimeout(() => res.writeHead(204).end(), DELIVERY_DELAY_MS);
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The acceptance suite against the restored stack. */
async function runAcceptance(stack: LaunchedStack): Promise<{ ok: boolean; summary: string }> {
  const file = path.resolve(__dirname, '..', '..', 'acceptance', 'dist', 'acceptance.test.js');
  const child = spawn(process.execPath, ['--test', '--test-reporter=tap', file], {
    env: { ...process.env, ACCEPTANCE_GATEWAY_URL: stack.gatewayUrl, ACCEPTANCE_ISSUER: stack.issuer },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const count = (name: string) => new RegExp(`^# ${name} (\\d+)$`, 'm').exec(out)?.[1] ?? '?';
  const failures = out.split('\n').filter((l) => /^\s*not ok/.test(l));
  return {
    ok: code === 0,
    summary: `${count('pass')} passed, ${count('fail')} failed${failures.length ? `: ${failures.slice(0, 5).join(' | ')}` : ''}`,
  };
}

async function waitUntil(at: number, each?: () => Promise<void>): Promise<void> {
  while (Date.now() < at) {
    await each?.();
    await new Promise((r) => setTimeout(r, Math.min(500, Math.max(0, at - Date.now()))));
  }
}

async function waitUntilTrue(probe: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

main().catch((err: unknown) => {
  log(
    `aborted: ${err instanceof RestoreRefused ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
  );
  process.exit(1);
});
