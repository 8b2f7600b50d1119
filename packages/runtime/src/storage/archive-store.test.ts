import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { text } from 'node:stream/consumers';
import { after, test } from 'node:test';
import { LocalArchiveStore, readRange } from './archive-store';

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

test('a range is read as one buffer, across the store’s chunks too, and a missing object is ENOENT', async () => {
  const store = new LocalArchiveStore(root);
  const whole = Buffer.from(Array.from({ length: 3 * 1024 * 1024 }, (_, i) => (i * 13) % 251));
  await store.put(
    'exports/r/archive.tar.gz',
    (async function* () {
      yield whole;
    })(),
  );
  for (const [start, end] of [
    [0, 0],
    [5, 1024 * 1024 + 4],
    [1024 * 1024, 2 * 1024 * 1024 - 1],
    [17, whole.length - 1],
  ] as const)
    assert.deepEqual(
      await readRange(store, 'exports/r/archive.tar.gz', { start, end }),
      whole.subarray(start, end + 1),
    );
  await store.delete('exports/r/archive.tar.gz');
  await assert.rejects(readRange(store, 'exports/r/archive.tar.gz', { start: 0, end: 1 }), { code: 'ENOENT' });
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
