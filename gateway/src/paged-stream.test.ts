import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { ReaderGone, writeParts } from './paged-stream';

/** A reader that takes one chunk at a time when the test lets it (`readOne`), recording how much it has taken. */
function slowReader(highWaterMark: number) {
  const waiting: (() => void)[] = [];
  let taken = 0;
  const out = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, callback) {
      waiting.push(() => {
        taken += chunk.length;
        callback();
      });
    },
  });
  return {
    out,
    taken: () => taken,
    /** Takes the oldest chunk written; false when none is waiting. */
    readOne: () => {
      const next = waiting.shift();
      next?.();
      return next !== undefined;
    },
  };
}

test('a part is asked for only after the reader took the earlier ones: at most one part waits in memory', async () => {
  const PART = 1_000;
  const reader = slowReader(PART);
  let written = 0;
  const bufferedWhenAsked: number[] = [];
  async function* parts() {
    for (let i = 0; i < 50; i++) {
      bufferedWhenAsked.push(written - reader.taken());
      written += PART;
      yield Buffer.alloc(PART, i);
    }
  }
  const done = writeParts(reader.out, parts());
  let finished = false;
  void done.then(() => (finished = true));
  // The reader takes a chunk whenever one waits, one turn of the event loop at a time, until the writer ends.
  while (!finished) {
    if (!reader.readOne()) await new Promise((resolve) => setImmediate(resolve));
  }
  await done;
  assert.equal(reader.taken(), 50 * PART);
  assert.ok(
    bufferedWhenAsked.every((buffered) => buffered <= PART),
    `a part was asked for while more than one waited: ${bufferedWhenAsked}`,
  );
});

test('a reader that goes away stops the parts: nothing more is asked for', async () => {
  const reader = slowReader(10);
  let asked = 0;
  let returned = false;
  async function* parts() {
    try {
      for (;;) {
        asked++;
        yield Buffer.alloc(100);
      }
    } finally {
      returned = true;
    }
  }
  const done = writeParts(reader.out, parts());
  reader.out.destroy();
  await assert.rejects(done, ReaderGone);
  assert.equal(asked, 1);
  assert.ok(returned, 'the generator was returned');
});
