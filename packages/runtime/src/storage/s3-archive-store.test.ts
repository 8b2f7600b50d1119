// The archive store's S3 path against a separate S3-compatible server speaking the S3 protocol over HTTP
// (tools/s3-test-server, gofakes3, built from the Go module proxy and cached like the chart's tools): multipart
// uploads, ranges, a failed upload leaving nothing, and a store that does not answer.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import * as path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { after, before, test } from 'node:test';
import { freePort } from '../config';
import { S3ArchiveStore } from './s3-archive-store';

const BUCKET = 'mileage-exports';
let server: ChildProcess;
let endpoint: string;
let store: S3ArchiveStore;

before(async () => {
  const build = path.join(__dirname, '..', '..', '..', '..', 'tools', 's3-test-server', 'build.sh');
  const binary = execFileSync('bash', [build], { encoding: 'utf8' }).trim();
  const port = await freePort();
  server = spawn(binary, ['-address', `127.0.0.1:${port}`, '-bucket', BUCKET], { stdio: ['ignore', 'ignore', 'pipe'] });
  // It logs "listening" once its listener is about to accept.
  let log = '';
  for await (const chunk of server.stderr!) {
    log += String(chunk);
    if (log.includes('listening')) break;
  }
  endpoint = `http://127.0.0.1:${port}`;
  store = new S3ArchiveStore({
    bucket: BUCKET,
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test-secret' },
  });
});
after(async () => {
  store.close();
  server.kill();
  await once(server, 'exit');
});

async function* bytes(total: number, chunk = 1024 * 1024) {
  for (let sent = 0; sent < total; sent += chunk) yield Buffer.alloc(Math.min(chunk, total - sent), sent % 251);
}

test('a multipart upload is stored whole, measured, read whole and by range, and deleted', async () => {
  const size = 20 * 1024 * 1024 + 17; // three parts of 8 MiB
  const expected = await buffer(bytes(size));
  const stored = await store.put('exports/s3/archive.tar.gz', bytes(size));
  assert.deepEqual(stored, { sizeBytes: size, sha256: createHash('sha256').update(expected).digest('hex') });
  assert.equal(await store.size('exports/s3/archive.tar.gz'), size);
  const whole = await buffer(await store.get('exports/s3/archive.tar.gz'));
  assert.ok(whole.equals(expected));
  const range = await buffer(
    await store.get('exports/s3/archive.tar.gz', { start: 8 * 1024 * 1024 - 5, end: 8 * 1024 * 1024 + 4 }),
  );
  assert.ok(range.equals(expected.subarray(8 * 1024 * 1024 - 5, 8 * 1024 * 1024 + 5)));
  await store.delete('exports/s3/archive.tar.gz');
  assert.equal(await store.size('exports/s3/archive.tar.gz'), undefined);
  await assert.rejects(store.get('exports/s3/archive.tar.gz'), { code: 'ENOENT' });
});

test('an upload whose source fails half way leaves no object', async () => {
  async function* failing() {
    yield* bytes(9 * 1024 * 1024); // past the first part
    throw new Error('the source broke');
  }
  await assert.rejects(store.put('exports/s3-broken/archive.tar.gz', failing()), /the source broke/);
  assert.equal(await store.size('exports/s3-broken/archive.tar.gz'), undefined);
});

test('a store that does not answer fails the write', async () => {
  const closed = new S3ArchiveStore({
    bucket: BUCKET,
    endpoint: `http://127.0.0.1:${await freePort()}`,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test-secret' },
  });
  try {
    await assert.rejects(closed.put('exports/unreachable/archive.tar.gz', bytes(1024)), /ECONNREFUSED|connect/);
  } finally {
    closed.close();
  }
});
