import type { Writable } from 'node:stream';

/** The reader went away before the body was written (the connection closed): nothing more is asked for. */
export class ReaderGone extends Error {
  constructor() {
    super('the reader closed the connection');
  }
}

/**
 * Writes each part `parts` yields to `out`, then ends it. A part is asked for only once `out` has taken the previous
 * ones (its buffer drained below its high-water mark), so a slow reader holds at most one part in this process, and
 * the owner is asked for its next page only as fast as the reader reads: memory stays flat whatever the copy's size.
 * A reader that closes the connection stops the parts (the generator is returned, so it asks for nothing more).
 */
export async function writeParts(out: Writable, parts: AsyncIterable<Uint8Array>): Promise<void> {
  for await (const part of parts) {
    if (out.destroyed) throw new ReaderGone();
    if (part.length && !out.write(part)) await drained(out);
  }
  await new Promise<void>((resolve, reject) => {
    out.once('error', reject);
    out.end(() => resolve());
  });
}

/** Resolves once `out` drains; rejects when it closes first. */
function drained(out: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (error?: Error) => {
      out.off('drain', onDrain);
      out.off('close', onClose);
      if (error) reject(error);
      else resolve();
    };
    const onDrain = () => settle();
    const onClose = () => settle(new ReaderGone());
    out.on('drain', onDrain);
    out.on('close', onClose);
  });
}
