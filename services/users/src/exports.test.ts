// Organization exports in the Users process (CONTRACT §8), over real gRPC, PostgreSQL as the runtime role, and a real
// directory: requested (one at a time), run by the job from one snapshot, read back as a tar.gz whose manifest
// describes its files, failed whole when the store fails, expired by the housekeeping, and deleted by an erasure.
import { status } from '@grpc/grpc-js';
import { usersV1 } from '@mileage/proto';
import { exportPartKey, LocalArchiveStore, writeExportPart, type ArchiveStore } from '@mileage/runtime/storage';
import { createLogger } from '@mileage/runtime/telemetry';
import { rejection } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  expireExports,
  EXPORT_CLAIM_MS,
  PAGE_ROWS,
  runExport,
  type ExportJobDeps,
  type ExportOwner,
} from './export-job';
import { archiveKey, ExportJobs } from './exports-repo';
import { user, usersSuite } from './users-suite.fixture';

const root = mkdtempSync(path.join(tmpdir(), 'users-exports-'));
const store = new LocalArchiveStore(root);
const suite = usersSuite('users_exports', {}, { archives: store });
after(() => rmSync(root, { recursive: true, force: true }));

const { ExportStatus } = usersV1;
const DEMO = 1;
let globex: number;
const jobDeps = (archives: ArchiveStore = store): ExportJobDeps => ({
  knex: suite.runtime.knex,
  store: archives,
  logger: createLogger({ service: 'users-test', level: 'silent' }),
  scimBaseUrl: 'https://mileage.example/scim/v2',
});
const request = (organizationId = DEMO) =>
  suite.organizationsIn(organizationId).requestExport({ actor: 'user:AliceAdm01', requestId: 'req-export' });

/** Runs the job once, as a replica's task would, with `archives` as its store. */
async function runNext(archives?: ArchiveStore) {
  const job = await new ExportJobs(suite.runtime.knex).claim(EXPORT_CLAIM_MS);
  assert.ok(job, 'an export was waiting');
  await runExport(jobDeps(archives), job);
  return job.id;
}

/** The whole archive through ReadExportArchive, in reads of `length` bytes (the gateway reads 1 MiB). */
async function download(id: string, organizationId = DEMO, length = 1_000): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let offset = 0; ;) {
    const { data, sizeBytes } = await suite.organizationsIn(organizationId).readExportArchive({ id, offset, length });
    parts.push(Buffer.from(data));
    offset += data.length;
    if (offset >= sizeBytes) return Buffer.concat(parts);
  }
}

function extract(archive: Buffer): Record<string, string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'export-archive-'));
  try {
    writeFileSync(path.join(dir, 'a.tar.gz'), archive);
    const names = execFileSync('tar', ['-tzf', 'a.tar.gz'], { cwd: dir }).toString().trim().split('\n');
    execFileSync('tar', ['-xzf', 'a.tar.gz'], { cwd: dir });
    return Object.fromEntries(names.map((name) => [name, readFileSync(path.join(dir, name), 'utf8')]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function* lines(records: object[]): AsyncGenerator<string> {
  for (const record of records) yield `${JSON.stringify(record)}\n`;
}

const jsonLines = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('organization exports', () => {
  before(async () => {
    ({
      organization: { id: globex },
    } = (await suite.organizations.createOrganization({ name: 'Globex', alias: 'globex' })) as {
      organization: usersV1.Organization;
    });
    await suite.usersIn(DEMO).createUser({ user: user({ userName: 'ann@demo.example' }) });
    await suite.usersIn(DEMO).createUser({ user: user({ userName: 'ina@demo.example', active: false }) });
    await suite.usersIn(globex).createUser({ user: user({ userName: 'gus@globex.example' }) });
    await suite.organizationsIn(DEMO).createScimToken({ name: 'Entra ID', actor: 'user:AliceAdm01', requestId: 'r' });
  });

  test('an export: queued once at a time, run from one snapshot, read back as the archive its manifest describes', async () => {
    const { export: queued } = await request();
    assert.equal(queued!.status, ExportStatus.EXPORT_STATUS_QUEUED);
    const again = await rejection(request());
    assert.deepEqual([again.code, again.reason], [status.ALREADY_EXISTS, 'EXPORT_RUNNING']);
    assert.equal((await rejection(suite.organizationsIn(globex).getExport({ id: queued!.id }))).code, status.NOT_FOUND);
    assert.equal((await request(globex)).export!.status, ExportStatus.EXPORT_STATUS_QUEUED, 'another organization');

    // A user recorded once the job has begun is not in its snapshot.
    const late: ArchiveStore = {
      ...store,
      put: async (key, body) => {
        if (key.endsWith('/users.jsonl'))
          await suite.usersIn(DEMO).createUser({ user: user({ userName: 'late@demo.example' }) });
        return store.put(key, body);
      },
      get: (key, range) => store.get(key, range),
      read: (key, range, into) => store.read(key, range, into),
      size: (key) => store.size(key),
      delete: (key) => store.delete(key),
    };
    const id = await runNext(late);
    assert.equal(id, queued!.id, 'the oldest first');
    const { export: done } = await suite.organizationsIn(DEMO).getExport({ id });
    assert.equal(done!.status, ExportStatus.EXPORT_STATUS_COMPLETED, done!.failureReason);
    const days = (done!.expireTime!.seconds - done!.completeTime!.seconds) / 86_400;
    assert.equal(days, 7);

    const archive = await download(id);
    assert.equal(archive.length, done!.sizeBytes);
    assert.equal(createHash('sha256').update(archive).digest('hex'), done!.sha256);
    const files = extract(archive);
    assert.deepEqual(Object.keys(files), [
      'manifest.json',
      'users.jsonl',
      'scim_tokens.jsonl',
      'provisioning_events.jsonl',
    ]);
    const manifest = JSON.parse(files['manifest.json']!) as {
      format: string;
      organization: { id: string; name: string };
      files: { name: string; rows: number; sha256: string }[];
    };
    assert.equal(manifest.format, 'mileage-export/1');
    assert.deepEqual(manifest.organization, { id: '1', name: 'Demo Org' });
    for (const file of manifest.files) {
      assert.equal(file.sha256, createHash('sha256').update(files[file.name]!).digest('hex'), file.name);
      assert.equal(file.rows, jsonLines(files[file.name]!).length, file.name);
    }
    const users = jsonLines(files['users.jsonl']!);
    assert.deepEqual(users.map((u) => u.userName).sort(), ['ann@demo.example', 'ina@demo.example']);
    assert.deepEqual(users[0]!.schemas, ['urn:ietf:params:scim:schemas:core:2.0:User']);
    assert.match(
      String((users[0]!.meta as { location: string }).location),
      /^https:\/\/mileage\.example\/scim\/v2\/Users\//,
    );
    const tokens = jsonLines(files['scim_tokens.jsonl']!);
    assert.deepEqual(
      tokens.map((t) => t.name),
      ['Entra ID'],
    );
    assert.ok(!files['scim_tokens.jsonl']!.includes('secret'), 'no secret nor its hash');
    const events = jsonLines(files['provisioning_events.jsonl']!);
    assert.ok(events.some((e) => e.action === 'export' && e.resource_id === id && e.credential === 'user:AliceAdm01'));
    const times = events.map((e) => String(e.at));
    assert.ok(
      times.every((at) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(at)),
      'to the microsecond, UTC',
    );
    assert.deepEqual(times, [...times].sort(), 'oldest first');
    assert.deepEqual(readdirSync(path.join(root, 'exports', id)), ['archive.tar.gz'], 'the parts are gone');

    // Done, so another may be asked for; the download is recorded in the trail.
    await suite.organizationsIn(DEMO).recordExportDownload({ id, actor: 'user:AliceAdm01', requestId: 'req-dl' });
    const { rows } = await suite.admin.knex.raw<{ rows: { operation: string }[] }>(
      `SELECT operation FROM users.provisioning_audit WHERE export_id = ? ORDER BY id`,
      [id],
    );
    assert.deepEqual(
      rows.map((r) => r.operation),
      ['export', 'download'],
    );
    await runNext(); // globex's
    const next = await request();
    assert.equal(next.export!.status, ExportStatus.EXPORT_STATUS_QUEUED);
    await runNext();
  });

  test('the trail file merges the Groups service’s part with the Users entries, oldest first, counted once', async () => {
    const { export: queued } = await request();
    // The Groups service's part as its WriteExportPart writes it (export-handlers.ts there): one entry older than
    // every Users one, one at the instant of the newest (before the Users entries of that instant), one after all.
    const { rows: newest } = await suite.admin.knex.raw<{ rows: { at: string }[] }>(
      `SELECT to_char(max(occurred_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at
         FROM users.provisioning_audit WHERE organization_id = ?`,
      [DEMO],
    );
    const groupWrite = (n: number, at: string) => ({
      id: `groups-${n}`,
      at,
      credential: 'mileage-scim',
      action: 'patch',
      resource_type: 'Group',
      resource_id: '12',
      outcome: 'succeeded',
      request_id: `req-group-${n}`,
      members_added: ['Joiner0001'],
      members_removed: [],
    });
    const groupsTrail = [
      groupWrite(3, '2000-01-01T00:00:00.000001Z'),
      groupWrite(1, newest[0]!.at),
      groupWrite(2, '2999-01-01T00:00:00.000000Z'),
    ];
    const groupsOwner: ExportOwner = {
      name: 'groups',
      files: ['groups.jsonl', 'provisioning_events.groups.jsonl'],
      writePart: async (exportId) => [
        await writeExportPart(store, exportId, 'groups.jsonl', lines([{ displayName: 'Fleet' }])),
        await writeExportPart(store, exportId, 'provisioning_events.groups.jsonl', lines(groupsTrail)),
      ],
    };
    const job = await new ExportJobs(suite.runtime.knex).claim(EXPORT_CLAIM_MS);
    await runExport({ ...jobDeps(), owners: [groupsOwner] }, job!);
    const { export: done } = await suite.organizationsIn(DEMO).getExport({ id: queued!.id });
    assert.equal(done!.status, ExportStatus.EXPORT_STATUS_COMPLETED, done!.failureReason);

    const files = extract(await download(queued!.id));
    const manifest = JSON.parse(files['manifest.json']!) as { files: { name: string; rows: number; sha256: string }[] };
    assert.deepEqual(
      manifest.files.map((f) => f.name),
      ['users.jsonl', 'scim_tokens.jsonl', 'groups.jsonl', 'provisioning_events.jsonl'],
      'the owners’ parts of the trail are no files of the archive',
    );
    for (const file of manifest.files) {
      assert.equal(file.sha256, createHash('sha256').update(files[file.name]!).digest('hex'), file.name);
      assert.equal(file.rows, jsonLines(files[file.name]!).length, file.name);
    }
    const events = jsonLines(files['provisioning_events.jsonl']!);
    const { rows: usersEntries } = await suite.admin.knex.raw<{ rows: { id: string; newest: boolean }[] }>(
      `SELECT id, occurred_at = max(occurred_at) OVER () AS newest FROM users.provisioning_audit
        WHERE organization_id = ? ORDER BY occurred_at, id`,
      [DEMO],
    );
    const usersIds = (newest: boolean) => usersEntries.filter((r) => r.newest === newest).map((r) => `users-${r.id}`);
    assert.deepEqual(
      events.map((e) => e.id),
      ['groups-3', ...usersIds(false), 'groups-1', ...usersIds(true), 'groups-2'],
    );
    assert.deepEqual(events[0], groupsTrail[0], 'a group write as its owner wrote it');
    assert.deepEqual(new Set(events.map((e) => e.resource_type)), new Set(['Group', 'ScimToken', 'Export']));
    assert.equal(
      done!.rows,
      manifest.files.reduce((sum, f) => sum + f.rows, 0),
      'every row counted once',
    );
    assert.deepEqual(readdirSync(path.join(root, 'exports', queued!.id)), ['archive.tar.gz'], 'the parts are gone');
  });

  test('a store that fails (a full disk) fails the export with its reason, leaves nothing, and a new one can follow', async () => {
    const full: ArchiveStore = {
      ...store,
      put: async (key, body) => {
        if (!key.endsWith('archive.tar.gz')) return store.put(key, body);
        return store.put(key, failAfterFirstChunk(body));
      },
      get: (key, range) => store.get(key, range),
      read: (key, range, into) => store.read(key, range, into),
      size: (key) => store.size(key),
      delete: (key) => store.delete(key),
    };
    const { export: queued } = await request();
    await runNext(full);
    const { export: failed } = await suite.organizationsIn(DEMO).getExport({ id: queued!.id });
    assert.equal(failed!.status, ExportStatus.EXPORT_STATUS_FAILED);
    assert.match(failed!.failureReason, /no space left on device/);
    assert.equal(existsSync(path.join(root, 'exports', queued!.id)), false, 'neither archive nor parts are left');
    const read = await rejection(
      suite.organizationsIn(DEMO).readExportArchive({ id: queued!.id, offset: 0, length: 10 }),
    );
    assert.equal(read.code, status.NOT_FOUND);
    assert.equal((await request()).export!.status, ExportStatus.EXPORT_STATUS_QUEUED);
    await runNext();
  });

  async function* failAfterFirstChunk(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    for await (const chunk of body) {
      yield chunk;
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    }
  }

  test('the housekeeping deletes an archive past its expiry, marks the export expired and says so in the trail', async () => {
    const { exports } = await suite.organizationsIn(DEMO).listExports({});
    const completed = exports.find((e) => e.status === ExportStatus.EXPORT_STATUS_COMPLETED)!;
    await suite.admin.knex.raw(
      `UPDATE users.organization_exports SET expires_at = now() - interval '1 second' WHERE id = ?`,
      [completed.id],
    );
    assert.equal(
      (await suite.organizationsIn(DEMO).getExport({ id: completed.id })).export!.status,
      ExportStatus.EXPORT_STATUS_EXPIRED,
      'expired from its expiry on, before the housekeeping ran',
    );
    assert.ok((await expireExports(jobDeps())) >= 1);
    assert.equal(await store.size(`exports/${completed.id}/archive.tar.gz`), undefined);
    const { export: expired } = await suite.organizationsIn(DEMO).getExport({ id: completed.id });
    assert.deepEqual(
      [expired!.status, expired!.sha256, expired!.sizeBytes],
      [ExportStatus.EXPORT_STATUS_EXPIRED, '', 0],
    );
    const { rows } = await suite.admin.knex.raw<{ rows: { actor: string }[] }>(
      `SELECT actor FROM users.provisioning_audit WHERE export_id = ? AND operation = 'expire'`,
      [completed.id],
    );
    assert.deepEqual(rows, [{ actor: 'housekeeping' }]);
    const listed = (await suite.organizationsIn(DEMO).listExports({})).exports;
    assert.ok(listed.length >= 3);
    assert.ok(
      listed.every((e, i) => i === 0 || e.requestTime!.seconds <= listed[i - 1]!.requestTime!.seconds),
      'newest first',
    );
  });

  test('an organization of more users than a page: each once, in id order, and none of another organization', async () => {
    const { organization } = await suite.organizations.createOrganization({ name: 'Hooli', alias: 'hooli' });
    const hooli = organization!.id;
    const count = 2 * PAGE_ROWS + 1;
    // Written straight into the table (a service call each would make the test slow), ids in the service's pattern.
    await suite.admin.knex.raw(
      `INSERT INTO users.users (id, organization_id, user_name, given_name, family_name, emails, timezone)
       SELECT 'H' || lpad(g::text, 9, '0'), ?, 'h' || g || '@hooli.example', 'Hooli', 'User ' || g,
              jsonb_build_array(jsonb_build_object('value', 'h' || g || '@hooli.example', 'primary', true)), 'UTC'
         FROM generate_series(1, ?::int) g`,
      [hooli, count],
    );
    const { export: queued } = await request(hooli);
    await runNext();
    const { export: done } = await suite.organizationsIn(hooli).getExport({ id: queued!.id });
    assert.equal(done!.status, ExportStatus.EXPORT_STATUS_COMPLETED, done!.failureReason);
    const archive = await download(queued!.id, hooli, 1 << 20);
    const ids = jsonLines(extract(archive)['users.jsonl']!).map((u) => String(u.id));
    const expected = Array.from({ length: count }, (_, i) => `H${String(i + 1).padStart(9, '0')}`);
    assert.deepEqual(ids, expected);
  });

  test("an offboarded organization's export is refused; its erasure deletes its archives, and an export it ends keeps nothing", async () => {
    const { organization } = await suite.organizations.createOrganization({ name: 'Initech', alias: 'initech' });
    const initech = organization!.id;
    await suite.usersIn(initech).createUser({ user: user({ userName: 'pat@initech.example' }) });
    const { export: completed } = await request(initech);
    await runNext();
    assert.ok((await store.size(archiveKey(completed!.id)))! > 0);

    // The erasure ends the next export between its parts and its archive (as if it had come while the job ran).
    const { export: running } = await request(initech);
    const erasedMeanwhile: ArchiveStore = {
      put: async (key, body) => {
        if (key === archiveKey(running!.id)) await new ExportJobs(suite.runtime.knex).endForErasure(initech);
        return store.put(key, body);
      },
      get: (key, range) => store.get(key, range),
      read: (key, range, into) => store.read(key, range, into),
      size: (key) => store.size(key),
      delete: (key) => store.delete(key),
    };
    await runNext(erasedMeanwhile);
    assert.equal(existsSync(path.join(root, 'exports', running!.id)), false, 'the ended job kept no archive');

    // A runner killed between the owners' parts and the archive left the Groups service's trail part behind.
    await writeExportPart(store, completed!.id, 'provisioning_events.groups.jsonl', lines([{ id: 'groups-1' }]));

    await suite.organizations.offboardOrganization({ organizationId: initech, now: true });
    const refused = await rejection(request(initech));
    assert.deepEqual([refused.code, refused.reason], [status.FAILED_PRECONDITION, 'ORGANIZATION_OFFBOARDING']);
    await suite.organizations.startErasure({ organizationId: initech });
    const erased = await suite.organizations.eraseOrganization({ organizationId: initech, maxBatches: 1000 });
    assert.equal(erased.done, true);
    assert.equal(erased.erasedRows.organization_exports, 2);
    assert.equal(existsSync(path.join(root, 'exports', completed!.id)), false, 'the archive and any part are deleted');
    assert.equal(await store.size(exportPartKey(completed!.id, 'provisioning_events.groups.jsonl')), undefined);
    const { rows } = await suite.admin.knex.raw<{ rows: unknown[] }>(
      `SELECT 1 FROM users.organization_exports WHERE organization_id = ?`,
      [initech],
    );
    assert.deepEqual(rows, []);
    const kept = (await suite.organizationsIn(DEMO).listExports({})).exports.filter(
      (e) => e.status === ExportStatus.EXPORT_STATUS_COMPLETED,
    );
    assert.ok(kept.length > 0);
    for (const other of kept) assert.ok(await store.size(archiveKey(other.id)), "another organization's archive stays");
  });
});
