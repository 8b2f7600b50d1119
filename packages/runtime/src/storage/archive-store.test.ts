import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { text } from 'node:stream/consumers';
import { after, test } from 'node:test';
import { LocalArchiveStore, readInChunks } from './archive-store';

const root = mkdtempSync(path.join(tmpdir(), 'archive-store-'));
after(() => rmSync(root, { recursive: true, force: true }));

async function* chunks(...parts: string[]) {
  for (const part of parts) yield Buffer.from(part);
}

test('an object is written whole, read whole or by range, measured, and deleted', async () => {
  const store = new LocalArchiveStore(root);
  const stored = await store.put('exports/a/archive.tar.gz', chunks('hello ', 'world'));
  assert.deepEqual(stored, {
    sizeBytes: 11,
    sha256: createHash('sha256').update('hello world').digest('hex'),
  });
  assert.equal(await text(await store.get('exports/a/archive.tar.gz')), 'hello world');
  assert.equal(await text(await store.get('exports/a/archive.tar.gz', { start: 6, end: 10 })), 'world');
  assert.equal(await store.size('exports/a/archive.tar.gz'), 11);
  await store.delete('exports/a/archive.tar.gz');
  assert.equal(await store.size('exports/a/archive.tar.gz'), undefined);
  await assert.rejects(store.get('exports/a/archive.tar.gz'), { code: 'ENOENT' });
  assert.deepEqual(readdirSync(root), [], 'the folders it left empty are gone');
});

test('a range is read into the caller’s memory (up to its length or the end), and a missing object is ENOENT', async () => {
  const store = new LocalArchiveStore(root);
  const whole = Buffer.from(Array.from({ length: 3 * 1024 * 1024 }, (_, i) => (i * 13) % 251));
  await store.put(
    'exports/r/archive.tar.gz',
    (async function* () {
      yield whole;
    })(),
  );
  const into = Buffer.alloc(2 * 1024 * 1024);
  for (const [start, end] of [
    [0, 0],
    [5, 1024 * 1024 + 4],
    [1024 * 1024, 2 * 1024 * 1024 - 1],
    [17, 2 * 1024 * 1024 + 16],
  ] as const) {
    into.fill(0);
    const read = await store.read('exports/r/archive.tar.gz', { start, end }, into);
    assert.equal(read, end + 1 - start);
    assert.ok(into.subarray(0, read).equals(whole.subarray(start, end + 1)), `${start}-${end}`);
  }
  // A range longer than the memory fills it; one past the object's end stops there.
  assert.equal(await store.read('exports/r/archive.tar.gz', { start: 3, end: whole.length - 1 }, into), into.length);
  assert.ok(into.equals(whole.subarray(3, 3 + into.length)));
  const end = whole.length + 99;
  assert.equal(await store.read('exports/r/archive.tar.gz', { start: whole.length - 10, end }, into), 10);
  assert.ok(into.subarray(0, 10).equals(whole.subarray(whole.length - 10)));
  await store.delete('exports/r/archive.tar.gz');
  await assert.rejects(store.read('exports/r/archive.tar.gz', { start: 0, end: 1 }, into), { code: 'ENOENT' });
});

test('an object read in chunks comes whole, each chunk in the same memory, and one shorter than said fails', async () => {
  const store = new LocalArchiveStore(root);
  const whole = Buffer.from(Array.from({ length: 2.5 * 1024 * 1024 + 3 }, (_, i) => (i * 7) % 253));
  await store.put(
    'exports/c/part.gz',
    (async function* () {
      yield whole;
    })(),
  );
  const seen: Buffer[] = [];
  const memories = new Set<ArrayBufferLike>();
  for await (const chunk of readInChunks(store, 'exports/c/part.gz', whole.length)) {
    seen.push(Buffer.from(chunk)); // a copy: the next chunk is read into the same memory
    memories.add(chunk.buffer);
  }
  assert.deepEqual(
    seen.map((c) => c.length),
    [1024 * 1024, 1024 * 1024, 0.5 * 1024 * 1024 + 3],
  );
  assert.ok(Buffer.concat(seen).equals(whole));
  assert.equal(memories.size, 1);
  await assert.rejects(async () => {
    for await (const _ of readInChunks(store, 'exports/c/part.gz', whole.length + 1));
  }, /ended at 2621443 bytes, before 2621444/);
  await store.delete('exports/c/part.gz');
});

test('a write that fails half way leaves nothing under its key, nor beside it', async () => {
  const store = new LocalArchiveStore(root);
  async function* failing() {
    yield Buffer.from('the first part');
    throw new Error('the source broke');
  }
  await assert.rejects(store.put('exports/b/archive.tar.gz', failing()), /the source broke/);
  assert.equal(await store.size('exports/b/archive.tar.gz'), undefined);
  assert.deepEqual(readdirSync(root), []);
});

test('a key that could leave the root is refused', async () => {
  const store = new LocalArchiveStore(root);
  for (const key of ['../x', '/etc/passwd', 'a/../../x', 'A/b'])
    await assert.rejects(store.put(key, chunks('x')), /not an archive key/);
});
