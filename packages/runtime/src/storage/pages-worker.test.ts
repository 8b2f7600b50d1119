// pagesInWorker: pages rendered in a worker thread at the lowest priority, handed over a few at a time.
import assert from 'node:assert/strict';
import { getPriority } from 'node:os';
import { test } from 'node:test';
import { SCHED_IDLE, schedulingPolicy } from './idle-thread';
import { pagesInWorker, RENDERING_PRIORITY } from './pages-worker';

const fixture = require.resolve('./pages-worker.fixture');

/** Atomics.waitAsync, which the compiler's ES2023 library does not declare (Node.js has it since 16). */
interface AtomicsWaitAsync {
  waitAsync(array: Int32Array, index: number, value: number): { value: Promise<string> | string };
}

/** Resolves once the worker has made at least `n` pages (no clock: the counter's own notification). */
async function madeAtLeast(counter: Int32Array, n: number): Promise<number> {
  for (;;) {
    const made = Atomics.load(counter, 0);
    if (made >= n) return made;
    await (Atomics as unknown as AtomicsWaitAsync).waitAsync(counter, 0, made).value;
  }
}

test('the pages arrive in order, rendered in the idle class at nice 19 while this thread keeps its own', async () => {
  const made = new SharedArrayBuffer(4);
  const texts: string[][] = [];
  const told: boolean[] = [];
  const task = { module: fixture, exportName: 'numberedPages', data: { count: 5, made } };
  for await (const page of pagesInWorker(task, (idle) => told.push(idle))) texts.push(page.texts.map(String));
  assert.deepEqual(
    texts.map((t) => t[0]),
    ['1\n', '2\n', '3\n', '4\n', '5\n'],
  );
  // Linux, where these tests run, with util-linux's chrt (as in the images).
  assert.deepEqual(told, [true]);
  for (const t of texts) assert.deepEqual(t.slice(1), [`${RENDERING_PRIORITY}\n`, `${SCHED_IDLE}\n`]);
  assert.equal(getPriority(), 0);
  assert.equal(schedulingPolicy(), 0);
});

test('the worker renders only a few pages ahead of the pages taken', async () => {
  const made = new SharedArrayBuffer(4);
  const counter = new Int32Array(made);
  const count = 40;
  // Beyond the page in hand here: one sent and waiting in the queue, and one made and held until it may be sent.
  const ahead = 2;
  let taken = 0;
  for await (const page of pagesInWorker({ module: fixture, exportName: 'numberedPages', data: { count, made } })) {
    taken++;
    assert.equal(page.texts[0], `${taken}\n`);
    // However long this reader takes, the worker stops at the bound: waiting for it to get there, it is exactly there.
    const bound = Math.min(count, taken + ahead);
    assert.equal(await madeAtLeast(counter, bound), bound);
  }
  assert.equal(taken, count);
});

test('a failure of the task rejects the reader after the pages before it', async () => {
  const seen: string[] = [];
  await assert.rejects(async () => {
    for await (const page of pagesInWorker({ module: fixture, exportName: 'failingPages', data: {} }))
      seen.push(String(page.texts[0]));
  }, /the source failed after its first page/);
  assert.deepEqual(seen, ['1\n']);
});

test('a page written as bytes arrives whole, in UTF-8, its memory handed over', async () => {
  const pages = [];
  for await (const page of pagesInWorker({ module: fixture, exportName: 'bytePages', data: { lines: 5_000 } }))
    pages.push(page);
  assert.equal(pages.length, 1);
  const [bytes] = pages[0]!.texts;
  assert.ok(bytes instanceof Uint8Array);
  const expected = Array.from({ length: 5_000 }, (_, i) => `${i} Zürich → Köln, 12 €\n`).join('');
  assert.equal(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'), expected);
  // Grown from 16 bytes to more than the pool's buffers: its own memory, transferred rather than copied.
  assert.ok(bytes.buffer.byteLength > Buffer.poolSize);
});

test("a page's memory goes back to the worker once written, and its next pages are written into it", async () => {
  const reused = new SharedArrayBuffer(4);
  const count = 6;
  let seen = 0;
  for await (const page of pagesInWorker({
    module: fixture,
    exportName: 'pagesWrittenInTurn',
    data: { count, reused },
  })) {
    const [bytes] = page.texts as Uint8Array[];
    assert.equal(Buffer.from(bytes!).toString().replace(/^\.+/, ''), `${seen++}\n`);
    page.written!(0);
    assert.equal(bytes!.buffer.byteLength, 0, 'handed back to the worker, not copied');
  }
  assert.equal(seen, count);
  // The first pages are made before any came back (the worker renders ahead); the others reuse theirs.
  assert.ok(Atomics.load(new Int32Array(reused), 0) >= count - 3, `${Atomics.load(new Int32Array(reused), 0)} reused`);
});
