import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { buffer, text } from 'node:stream/consumers';
import { gunzipSync } from 'node:zlib';
import { after, test } from 'node:test';
import { LocalArchiveStore } from './archive-store';
import {
  encodedPages,
  exportPartKey,
  givePageBackToWrite,
  PageBytes,
  pagesWrittenAgain,
  writeExportFiles,
  type ExportFilesPage,
} from './part';

const root = mkdtempSync(path.join(tmpdir(), 'export-part-'));
after(() => rmSync(root, { recursive: true, force: true }));

const EXPORT_ID = '00000000-0000-4000-8000-000000000001';
const FILES = [{ name: 'rows.jsonl' }, { name: 'rows.csv', header: 'n,square\n' }];

async function* numbered(pages: number, perPage: number, onPage: (page: number) => void = () => {}) {
  for (let page = 0; page < pages; page++) {
    onPage(page);
    const ns = Array.from({ length: perPage }, (_, i) => page * perPage + i);
    yield {
      rows: perPage,
      texts: [ns.map((n) => `{"n":${n}}\n`).join(''), ns.map((n) => `${n},${n * n}\n`).join('')],
    } satisfies ExportFilesPage;
  }
}

const sha256 = (body: string) => createHash('sha256').update(body).digest('hex');

test('each file gets its header and its text of every page, counted and measured, from one pass', async () => {
  const store = new LocalArchiveStore(path.join(root, 'whole'));
  let passes = 0;
  const files = await writeExportFiles(
    store,
    EXPORT_ID,
    FILES,
    numbered(3, 2, (page) => (passes += page === 0 ? 1 : 0)),
  );
  const jsonl = '{"n":0}\n{"n":1}\n{"n":2}\n{"n":3}\n{"n":4}\n{"n":5}\n';
  const csv = 'n,square\n0,0\n1,1\n2,4\n3,9\n4,16\n5,25\n';
  assert.equal(passes, 1);
  assert.deepEqual(files, [
    { name: 'rows.jsonl', rows: 6, sha256: sha256(jsonl), sizeBytes: jsonl.length },
    { name: 'rows.csv', rows: 6, sha256: sha256(csv), sizeBytes: csv.length },
  ]);
  assert.equal(await text(await store.get(exportPartKey(EXPORT_ID, 'rows.jsonl'))), jsonl);
  assert.equal(await text(await store.get(exportPartKey(EXPORT_ID, 'rows.csv'))), csv);
});

test('a file with gzip is stored compressed, with the size and SHA-256 of its text', async () => {
  const store = new LocalArchiveStore(path.join(root, 'gzip'));
  const files = await writeExportFiles(
    store,
    EXPORT_ID,
    FILES.map((file) => ({ ...file, gzip: true })),
    numbered(3, 2),
  );
  const jsonl = '{"n":0}\n{"n":1}\n{"n":2}\n{"n":3}\n{"n":4}\n{"n":5}\n';
  const csv = 'n,square\n0,0\n1,1\n2,4\n3,9\n4,16\n5,25\n';
  const stored = await Promise.all(
    FILES.map(async ({ name }) => buffer(await store.get(exportPartKey(EXPORT_ID, name)))),
  );
  assert.deepEqual(
    stored.map((bytes) => gunzipSync(bytes).toString()),
    [jsonl, csv],
  );
  assert.deepEqual(files, [
    { name: 'rows.jsonl', rows: 6, sha256: sha256(jsonl), sizeBytes: jsonl.length, gzipBytes: stored[0]!.length },
    { name: 'rows.csv', rows: 6, sha256: sha256(csv), sizeBytes: csv.length, gzipBytes: stored[1]!.length },
  ]);
});

for (const pages of [3, 0])
  test(`pages encoded beforehand (encodedPages) store the text the same pages store plain (${pages} pages)`, async () => {
    const mixed = [FILES[0]!, { ...FILES[1]!, gzip: true }];
    const stores = ['plain', 'encoded'].map(
      (side) => new LocalArchiveStore(path.join(root, `encoded-${pages}-${side}`)),
    );
    const plain = await writeExportFiles(stores[0]!, EXPORT_ID, FILES, numbered(pages, 2));
    const encoded = await writeExportFiles(stores[1]!, EXPORT_ID, mixed, encodedPages(mixed, numbered(pages, 2)), true);
    const read = (store: LocalArchiveStore) =>
      Promise.all(mixed.map(async ({ name }) => buffer(await store.get(exportPartKey(EXPORT_ID, name)))));
    const [storedPlain, storedEncoded] = await Promise.all(stores.map(read));
    assert.deepEqual(storedEncoded![0], storedPlain![0]);
    // Gzip members of their own, one a page: one stream of the same text to any reader of gzip.
    assert.equal(gunzipSync(storedEncoded![1]!).toString(), storedPlain![1]!.toString());
    assert.deepEqual(
      encoded.map(({ gzipBytes: _, ...file }) => file),
      plain,
    );
    assert.equal(encoded[1]!.gzipBytes, storedEncoded![1]!.length);
    assert.equal(encoded[1]!.rows, pages * 2);
  });

test('encoded pages that end without their measures fail every file, leaving nothing', async () => {
  const store = new LocalArchiveStore(path.join(root, 'unmeasured'));
  async function* unmeasured() {
    for await (const page of encodedPages(FILES, numbered(2, 2))) if (!page.measured) yield page;
  }
  await assert.rejects(writeExportFiles(store, EXPORT_ID, FILES, unmeasured(), true), /without their measures/);
  for (const { name } of FILES) assert.equal(await store.size(exportPartKey(EXPORT_ID, name)), undefined);
});

test('a page is read only once every file has taken the one before: a slow file holds the pass back', async () => {
  const taken = [0, 0];
  let ahead = 0;
  class CountingStore extends LocalArchiveStore {
    override put(key: string, body: AsyncIterable<Uint8Array>) {
      const file = key.endsWith('.csv') ? 1 : 0;
      async function* counted() {
        for await (const chunk of body) {
          // The CSV's writer takes its chunks slowly (a timer, not a synchronisation: the pass must wait for it).
          if (file === 1) await new Promise((resolve) => setTimeout(resolve, 2));
          taken[file]!++;
          yield chunk;
        }
      }
      return super.put(key, counted());
    }
  }
  const store = new CountingStore(path.join(root, 'slow'));
  await writeExportFiles(
    store,
    EXPORT_ID,
    [{ name: 'rows.jsonl' }, { name: 'rows.csv' }],
    numbered(50, 10, (page) => (ahead = Math.max(ahead, page - Math.min(...taken)))),
  );
  assert.deepEqual(taken, [50, 50]);
  assert.ok(ahead <= 2, `the pass ran ${ahead} pages ahead of the slowest file`);
});

// Pages encoded in advance, as the Drives part's worker hands them over: the file's own error, not the missing measures.
for (const kind of ['text', 'gzip', 'encoded'] as const)
  test(`a file that cannot be written fails the pass and every file, leaving nothing (${kind})`, async () => {
    const dir = path.join(root, `full-${kind}`);
    let read = 0;
    let failedAt = -1;
    const files = FILES.map((file) => ({ ...file, gzip: kind !== 'text' }));
    const pages = numbered(1_000, 10, () => read++);
    class FullDisk extends LocalArchiveStore {
      override put(key: string, body: AsyncIterable<Uint8Array>) {
        if (!key.endsWith('.csv')) return super.put(key, body);
        async function* fails() {
          for await (const chunk of body) {
            yield chunk;
            // The first write fails.
            failedAt = read;
            throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
          }
        }
        return super.put(key, fails());
      }
    }
    await assert.rejects(
      kind === 'encoded'
        ? writeExportFiles(new FullDisk(dir), EXPORT_ID, files, encodedPages(files, pages), true)
        : writeExportFiles(new FullDisk(dir), EXPORT_ID, files, pages),
      { code: 'ENOSPC' },
    );
    assert.ok(failedAt >= 0 && read - failedAt < 10, `the pass went on for ${read - failedAt} pages`);
    assert.deepEqual(
      readdirSync(dir, { recursive: true }).filter((f) => String(f).includes('.')),
      [],
    );
  });

test('a pass that fails (a broken read) fails every file, leaving nothing', async () => {
  const dir = path.join(root, 'broken');
  async function* broken() {
    yield* numbered(2, 10);
    throw new Error('the connection was lost');
  }
  await assert.rejects(writeExportFiles(new LocalArchiveStore(dir), EXPORT_ID, FILES, broken()), /connection was lost/);
  assert.deepEqual(
    readdirSync(dir, { recursive: true }).filter((f) => String(f).includes('.')),
    [],
  );
});

test('PageBytes: clear writes the same memory again', () => {
  const page = new PageBytes(4);
  page.write('ab');
  page.writeBytes(Buffer.from('cdef'));
  assert.equal(page.take().toString(), 'abcdef', 'grown to hold what was written');
  const memory = page.take().buffer;
  page.clear();
  page.write('xy');
  assert.equal(page.take().toString(), 'xy');
  assert.equal(page.take().buffer, memory);
});

for (const gzip of [false, true])
  test(`a page's memory is given back only once its file has it: written over then, the files stay whole${gzip ? ' (gzip)' : ''}`, async () => {
    const store = new LocalArchiveStore(path.join(root, `reused-${gzip}`));
    const handedBack: string[] = [];
    async function* pages() {
      for (let page = 0; page < 20; page++) {
        const texts = [Buffer.from(`{"page":${page}}\n`.repeat(5_000)), Buffer.from(`${page}\n`.repeat(5_000))];
        yield {
          rows: 5_000,
          texts,
          // What a writer of pages does with memory given back: the next page is written into it.
          written: (i: number) => {
            handedBack.push(`${page}:${i}`);
            texts[i]!.fill('#');
          },
        } satisfies ExportFilesPage;
      }
    }
    const files = await writeExportFiles(
      store,
      EXPORT_ID,
      [
        { name: 'pages.jsonl', gzip },
        { name: 'pages.csv', gzip },
      ],
      pages(),
    );
    const stored = async (name: string) => {
      const bytes = await buffer(await store.get(exportPartKey(EXPORT_ID, name)));
      return (gzip ? gunzipSync(bytes) : bytes).toString();
    };
    const range = Array.from({ length: 20 }, (_, page) => page);
    const jsonl = range.map((page) => `{"page":${page}}\n`.repeat(5_000)).join('');
    const csv = range.map((page) => `${page}\n`.repeat(5_000)).join('');
    assert.equal(await stored('pages.jsonl'), jsonl);
    assert.equal(await stored('pages.csv'), csv);
    assert.deepEqual(
      files.map((f) => f.sha256),
      [sha256(jsonl), sha256(csv)],
    );
    assert.deepEqual(handedBack.sort(), range.flatMap((page) => [`${page}:0`, `${page}:1`]).sort(), 'each text once');
  });

test('PageBytes begins in the smallest memory given back that holds it, and only a few are kept', () => {
  const sizes = [300_000, 200_000, 400_000];
  const given = sizes.map((size) => Buffer.allocUnsafeSlow(size).buffer);
  for (const memory of given) givePageBackToWrite(memory);
  const before = pagesWrittenAgain();
  assert.equal(new PageBytes(250_000).take().buffer, given[0], 'the smallest that holds it');
  assert.equal(new PageBytes(500_000).take().buffer.byteLength, 500_000, 'none holds it: new memory');
  assert.equal(new PageBytes(100_000).take().buffer, given[1]);
  assert.equal(new PageBytes(100_000).take().buffer, given[2]);
  assert.equal(pagesWrittenAgain() - before, 3);
  for (let i = 0; i < 20; i++) givePageBackToWrite(Buffer.allocUnsafeSlow(100_000 + i).buffer);
  let kept = 0;
  while (new PageBytes(1).take().buffer.byteLength >= 100_000) kept++;
  assert.equal(kept, 8, 'eight kept, the largest');
});
