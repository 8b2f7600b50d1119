// Organization exports with their archives in S3, as in Kubernetes: the same job, reads and housekeeping as
// exports.test.ts (whose store is a folder), against a real S3-compatible server (SeaweedFS, startS3TestServer) with
// signed requests. An unreachable store or wrong credentials fail the export with a reason that says so.
import { usersV1 } from '@mileage/proto';
import { exportPartKey, S3ArchiveStore, type ArchiveStore, type S3StoreOptions } from '@mileage/runtime/storage';
import { createLogger } from '@mileage/runtime/telemetry';
import { startS3TestServer, type S3TestServer } from '@mileage/runtime/testing';
import { freePort } from '@mileage/runtime/config';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { expireExports, EXPORT_CLAIM_MS, runExport, type ExportJobDeps } from './export-job';
import { archiveKey, ExportJobs } from './exports-repo';
import { user, usersSuite } from './users-suite.fixture';

let server: S3TestServer;
let s3: S3ArchiveStore;
before(async () => {
  server = await startS3TestServer();
  s3 = new S3ArchiveStore(server.storeOptions);
});
after(async () => {
  s3?.close();
  await server?.stop();
});
// The service is created before the server has started: it is given this store, which is the S3 one once it has.
const store: ArchiveStore = {
  put: (key, body) => s3.put(key, body),
  get: (key, range) => s3.get(key, range),
  read: (key, range, into) => s3.read(key, range, into),
  size: (key) => s3.size(key),
  delete: (key) => s3.delete(key),
};
const suite = usersSuite('users_exports_s3', {}, { archives: store });

const { ExportStatus } = usersV1;
const DEMO = 1;
const request = () =>
  suite.organizationsIn(DEMO).requestExport({ actor: 'user:AliceAdm01', requestId: 'req-export-s3' });

const jobDeps = (archives: ArchiveStore = store): ExportJobDeps => ({
  knex: suite.runtime.knex,
  store: archives,
  logger: createLogger({ service: 'users-test', level: 'silent' }),
  scimBaseUrl: 'https://mileage.example/scim/v2',
});

/** Runs the next export once, as a replica's task would, with `archives` as its store. */
async function runNext(archives?: ArchiveStore): Promise<usersV1.Export> {
  const job = await new ExportJobs(suite.runtime.knex).claim(EXPORT_CLAIM_MS);
  assert.ok(job, 'an export was waiting');
  await runExport(jobDeps(archives), job);
  return (await suite.organizationsIn(DEMO).getExport({ id: job.id })).export!;
}

/** Runs the next export with a store that has `options` instead of the server's good ones, and closes it. */
async function runNextWith(options: Partial<S3StoreOptions>): Promise<usersV1.Export> {
  const other = new S3ArchiveStore({ ...server.storeOptions, ...options });
  try {
    return await runNext(other);
  } finally {
    other.close();
  }
}

/** The names in a tar.gz. */
function namesIn(archive: Buffer): string[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'export-archive-'));
  try {
    writeFileSync(path.join(dir, 'a.tar.gz'), archive);
    return execFileSync('tar', ['-tzf', 'a.tar.gz'], { cwd: dir }).toString().trim().split('\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('organization exports in S3', () => {
  before(async () => {
    await suite.usersIn(DEMO).createUser({ user: user({ userName: 'ann@demo.example' }) });
  });

  test('an export is written to the bucket, read back in ranges, its parts removed, and expired by the housekeeping', async () => {
    const { export: queued } = await request();
    const done = await runNext();
    assert.equal(done.id, queued!.id);
    assert.equal(done.status, ExportStatus.EXPORT_STATUS_COMPLETED, done.failureReason);

    // ReadExportArchive in reads of 1,000 bytes: each a ranged GET from the bucket.
    const parts: Buffer[] = [];
    for (let offset = 0; offset < done.sizeBytes;) {
      const { data } = await suite.organizationsIn(DEMO).readExportArchive({ id: done.id, offset, length: 1_000 });
      assert.ok(data.length > 0 && data.length <= 1_000);
      parts.push(Buffer.from(data));
      offset += data.length;
    }
    const archive = Buffer.concat(parts);
    assert.equal(archive.length, done.sizeBytes);
    assert.equal(createHash('sha256').update(archive).digest('hex'), done.sha256);
    assert.equal(await s3.size(archiveKey(done.id)), done.sizeBytes);
    const names = namesIn(archive);
    assert.deepEqual(names, ['manifest.json', 'users.jsonl', 'scim_tokens.jsonl', 'provisioning_events.jsonl']);
    for (const name of names.slice(1))
      assert.equal(await s3.size(exportPartKey(done.id, name)), undefined, `the part ${name} is gone`);

    await suite.admin.knex.raw(
      `UPDATE users.organization_exports SET expires_at = now() - interval '1 second' WHERE id = ?`,
      [done.id],
    );
    assert.ok((await expireExports(jobDeps())) >= 1);
    assert.equal(await s3.size(archiveKey(done.id)), undefined, 'the archive is deleted from the bucket');
    const { export: expired } = await suite.organizationsIn(DEMO).getExport({ id: done.id });
    assert.equal(expired!.status, ExportStatus.EXPORT_STATUS_EXPIRED);
  });

  test('an unreachable store, or wrong credentials, fail the export with the reason; nothing is left; the next one is written', async () => {
    await request();
    const unreachable = await runNextWith({ endpoint: `http://127.0.0.1:${await freePort()}` });
    assert.equal(unreachable.status, ExportStatus.EXPORT_STATUS_FAILED);
    assert.match(unreachable.failureReason, /^the export could not be written: .*ECONNREFUSED/);

    await request();
    const { credentials } = server.storeOptions;
    const forged = await runNextWith({
      credentials: { ...credentials, secretAccessKey: `${credentials.secretAccessKey}x` },
    });
    assert.equal(forged.status, ExportStatus.EXPORT_STATUS_FAILED);
    assert.match(forged.failureReason, /^the export could not be written: .*signature/i);
    assert.ok(!forged.failureReason.includes(credentials.secretAccessKey), 'no secret in the reason');
    for (const failed of [unreachable, forged]) {
      assert.equal(await s3.size(archiveKey(failed.id)), undefined);
      assert.equal(await s3.size(exportPartKey(failed.id, 'users.jsonl')), undefined);
    }

    await request();
    const next = await runNext();
    assert.equal(next.status, ExportStatus.EXPORT_STATUS_COMPLETED, next.failureReason);
    assert.ok((await s3.size(archiveKey(next.id)))! > 0);
  });
});
