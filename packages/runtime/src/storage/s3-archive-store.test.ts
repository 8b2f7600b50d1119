// The archive store's S3 path against a real S3-compatible server, SeaweedFS (startS3TestServer: built from the Go
// module proxy, requests signed by an identity limited to the bucket): one-request and multipart uploads, ranges, a
// failed upload leaving neither object nor parts, wrong or missing credentials refused, a store that does not answer.
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { buffer } from 'node:stream/consumers';
import { after, before, test } from 'node:test';
import { freePort } from '../config';
import { S3ArchiveStore } from './s3-archive-store';
import { startS3TestServer, type S3TestServer } from './s3-test-server.fixture';

let server: S3TestServer;
let store: S3ArchiveStore;

before(async () => {
  server = await startS3TestServer();
  store = new S3ArchiveStore(server.storeOptions);
});
after(async () => {
  store?.close();
  await server?.stop();
});

async function* bytes(total: number, chunk = 1024 * 1024) {
  for (let sent = 0; sent < total; sent += chunk) yield Buffer.alloc(Math.min(chunk, total - sent), sent % 251);
}
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

test('a small object (one request) is stored, measured, read whole and by range, replaced, and deleted', async () => {
  const key = 'exports/s3-small/users.jsonl';
  const text = Buffer.from('{"userName":"ann@demo.example"}\n'.repeat(100));
  assert.deepEqual(await store.put(key, bytes(0)), { sizeBytes: 0, sha256: sha256(Buffer.alloc(0)) });
  assert.equal(await store.size(key), 0);
  assert.deepEqual(
    await store.put(
      key,
      (async function* () {
        yield text;
      })(),
    ),
    { sizeBytes: text.length, sha256: sha256(text) },
  );
  assert.equal(await store.size(key), text.length);
  assert.ok((await buffer(await store.get(key))).equals(text));
  assert.ok((await buffer(await store.get(key, { start: 3, end: 12 }))).equals(text.subarray(3, 13)));
  await store.delete(key);
  assert.equal(await store.size(key), undefined);
  await store.delete(key); // nothing there: no error
});

test('a chunk written over once the next is asked for (ArchiveStore.put) leaves the multipart object whole', async () => {
  const size = 10 * 1024 * 1024; // two parts, each gathered from many chunks
  const expected = await buffer(bytes(size));
  // One buffer for every chunk, as an export's pages reuse theirs: the upload must not keep it.
  async function* inOneBuffer() {
    const memory = Buffer.alloc(1024 * 1024);
    for await (const chunk of bytes(size)) {
      chunk.copy(memory);
      yield memory.subarray(0, chunk.length);
      memory.fill(0);
    }
  }
  assert.deepEqual(await store.put('exports/s3-reused/archive.tar.gz', inOneBuffer()), {
    sizeBytes: size,
    sha256: sha256(expected),
  });
  assert.ok((await buffer(await store.get('exports/s3-reused/archive.tar.gz'))).equals(expected));
  await store.delete('exports/s3-reused/archive.tar.gz');
});

test('a multipart upload is stored whole, measured, read whole and by range, and deleted', async () => {
  const size = 20 * 1024 * 1024 + 17; // three parts of 8 MiB
  const expected = await buffer(bytes(size));
  const stored = await store.put('exports/s3/archive.tar.gz', bytes(size));
  assert.deepEqual(stored, { sizeBytes: size, sha256: sha256(expected) });
  assert.equal(await store.size('exports/s3/archive.tar.gz'), size);
  const whole = await buffer(await store.get('exports/s3/archive.tar.gz'));
  assert.ok(whole.equals(expected));
  // Across the first part's end, and the last bytes of the last part.
  const range = await buffer(
    await store.get('exports/s3/archive.tar.gz', { start: 8 * 1024 * 1024 - 5, end: 8 * 1024 * 1024 + 4 }),
  );
  assert.ok(range.equals(expected.subarray(8 * 1024 * 1024 - 5, 8 * 1024 * 1024 + 5)));
  const tail = await buffer(await store.get('exports/s3/archive.tar.gz', { start: size - 3, end: size - 1 }));
  assert.ok(tail.equals(expected.subarray(size - 3)));
  // Into the caller's memory: a range across a part's end, one longer than the memory, and the last bytes.
  const into = Buffer.alloc(1024 * 1024);
  const across = { start: 8 * 1024 * 1024 - 100, end: 8 * 1024 * 1024 + 99 };
  assert.equal(await store.read('exports/s3/archive.tar.gz', across, into), 200);
  assert.ok(into.subarray(0, 200).equals(expected.subarray(across.start, across.end + 1)));
  assert.equal(await store.read('exports/s3/archive.tar.gz', { start: 5, end: size - 1 }, into), into.length);
  assert.ok(into.equals(expected.subarray(5, 5 + into.length)));
  assert.equal(await store.read('exports/s3/archive.tar.gz', { start: size - 3, end: size - 1 }, into), 3);
  assert.ok(into.subarray(0, 3).equals(expected.subarray(size - 3)));
  await store.delete('exports/s3/archive.tar.gz');
  assert.equal(await store.size('exports/s3/archive.tar.gz'), undefined);
  await assert.rejects(store.get('exports/s3/archive.tar.gz'), { code: 'ENOENT' });
  await assert.rejects(store.read('exports/s3/archive.tar.gz', { start: 0, end: 1 }, into), { code: 'ENOENT' });
});

test('an upload whose source fails half way leaves no object and no parts', async () => {
  async function* failing() {
    yield* bytes(9 * 1024 * 1024); // past the first part
    throw new Error('the source broke');
  }
  await assert.rejects(store.put('exports/s3-broken/archive.tar.gz', failing()), /the source broke/);
  assert.equal(await store.size('exports/s3-broken/archive.tar.gz'), undefined);
  const client = new S3Client({ ...server.storeOptions, maxAttempts: 1 });
  try {
    const { Uploads } = await client.send(new ListMultipartUploadsCommand({ Bucket: server.bucket }));
    assert.deepEqual(Uploads ?? [], [], 'the multipart upload was aborted');
  } finally {
    client.destroy();
  }
});

test('wrong credentials, or none, are refused: nothing is written', async () => {
  const { credentials } = server.storeOptions;
  const forged = new S3ArchiveStore({
    ...server.storeOptions,
    credentials: { ...credentials, secretAccessKey: `${credentials.secretAccessKey}x` },
  });
  const unknown = new S3ArchiveStore({
    ...server.storeOptions,
    credentials: { accessKeyId: 'not-an-identity', secretAccessKey: credentials.secretAccessKey },
  });
  try {
    await assert.rejects(forged.put('exports/s3-forged/archive.tar.gz', bytes(1024)), {
      name: 'SignatureDoesNotMatch',
    });
    await assert.rejects(unknown.put('exports/s3-forged/archive.tar.gz', bytes(1024)), { name: 'InvalidAccessKeyId' });
    await assert.rejects(forged.size('exports/s3-forged/archive.tar.gz'));
  } finally {
    forged.close();
    unknown.close();
  }
  assert.equal(await store.size('exports/s3-forged/archive.tar.gz'), undefined);
  // An unsigned request, as anyone who finds the endpoint could send.
  await store.put('exports/s3-private/archive.tar.gz', bytes(10));
  const anonymous = await fetch(`${server.endpoint}/${server.bucket}/exports/s3-private/archive.tar.gz`);
  assert.equal(anonymous.status, 403);
  await store.delete('exports/s3-private/archive.tar.gz');
});

test("the store's identity is limited to its bucket", async () => {
  const elsewhere = new S3ArchiveStore({ ...server.storeOptions, bucket: 'another-bucket' });
  try {
    await assert.rejects(elsewhere.put('exports/s3-elsewhere/archive.tar.gz', bytes(1024)), { name: 'AccessDenied' });
  } finally {
    elsewhere.close();
  }
});

test('a store that refuses connections fails the write', async () => {
  const closed = new S3ArchiveStore({ ...server.storeOptions, endpoint: `http://127.0.0.1:${await freePort()}` });
  try {
    await assert.rejects(closed.put('exports/unreachable/archive.tar.gz', bytes(1024)), /ECONNREFUSED|connect/);
  } finally {
    closed.close();
  }
});

test('a store that accepts the connection and never answers fails the write, and a read, after its idle timeout', async () => {
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', () => {}); // read the request, answer nothing
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as AddressInfo;
  const frozen = new S3ArchiveStore({
    ...server.storeOptions,
    endpoint: `http://127.0.0.1:${port}`,
    idleTimeoutMs: 300,
  });
  try {
    await assert.rejects(frozen.put('exports/frozen/archive.tar.gz', bytes(1024)), /timed? ?out|timeout/i);
    await assert.rejects(frozen.size('exports/frozen/archive.tar.gz'), /timed? ?out|timeout/i);
    assert.ok(sockets.size > 0, 'the store did connect: the failure is the silence, not a refusal');
  } finally {
    frozen.close();
    for (const socket of sockets) socket.destroy();
    silent.close();
  }
});
