import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { type ArchiveStore } from './archive-store';

/** A file of an export's archive as its owner wrote it: what the manifest says of it, and its size. */
export interface ExportPartFile {
  name: string;
  rows: number;
  /** The SHA-256 (hex) and size of the file's text, as the archive holds it. */
  sha256: string;
  sizeBytes: number;
  /**
   * Stored compressed, in this many bytes of gzip (writeExportFiles' `gzip`): the archive copies them as they are
   * (tarGz). Absent when the part is stored as its text.
   */
  gzipBytes?: number;
}

/** Where an owner's part of an export is kept until the archive holds it. */
export const exportPartKey = (exportId: string, name: string) => `exports/${exportId}/parts/${name}`;

/**
 * Writes one part of an export to the store: `header` (a CSV's, not a row) and `lines` (each ending in a newline, one
 * row each), counted, in chunks of about 64 KiB (a write per line would cost more than the line).
 */
export async function writeExportPart(
  store: ArchiveStore,
  exportId: string,
  name: string,
  lines: AsyncIterable<string>,
  header = '',
): Promise<ExportPartFile> {
  let count = 0;
  async function* bytes() {
    let batch = header;
    for await (const line of lines) {
      count++;
      batch += line;
      if (batch.length >= 65_536) {
        yield Buffer.from(batch);
        batch = '';
      }
    }
    if (batch) yield Buffer.from(batch);
  }
  const stored = await store.put(exportPartKey(exportId, name), bytes());
  return { name, rows: count, sha256: stored.sha256, sizeBytes: stored.sizeBytes };
}

/** A page of several files written together (writeExportFiles): each file's text for the page, and its rows. */
export interface ExportFilesPage {
  rows: number;
  /** One text per file, in the order of the files; each of whole lines, as a string or as UTF-8 (PageBytes). */
  texts: (string | Uint8Array)[];
  /** Called once file `i`'s store is done with `texts[i]`: its memory may be written again (pagesInWorker). */
  written?: (i: number) => void;
  /**
   * The files' text measured where the pages were encoded (encodedPages): on the last page, which has no rows and no
   * texts.
   */
  measured?: { sha256: string; sizeBytes: number }[];
}

/** A file of writeExportFiles: its name, its CSV header, and whether it is stored compressed. */
export interface ExportFileSpec {
  name: string;
  header?: string;
  gzip?: boolean;
}

/**
 * `pages` as their files store them (writeExportFiles' `encoded`), for a worker thread to do it in the idle class
 * (pagesInWorker's `files`): each file's header first, each text measured (size and SHA-256) and, where the file has
 * `gzip`, compressed into a gzip member of its own (one stream to any reader of gzip, RFC 1952 2.2, as the archive's
 * are, tarGz); the measures come last, on a page of no rows. A text compressed is written (its page's `written`, or
 * its own memory, PageBytes, given back to write); one stored as it is, once its file has it.
 */
export async function* encodedPages(
  files: readonly ExportFileSpec[],
  pages: AsyncIterable<ExportFilesPage>,
): AsyncGenerator<ExportFilesPage> {
  const measures = files.map(() => ({ sizeBytes: 0, hash: createHash('sha256') }));
  const encode = (i: number, text: string | Uint8Array): Uint8Array => {
    const bytes = asBuffer(text);
    measures[i]!.sizeBytes += bytes.length;
    measures[i]!.hash.update(bytes);
    if (!files[i]!.gzip) return bytes;
    return gzipSync(bytes, EXPORT_GZIP);
  };
  const headers = files.map((file) => file.header ?? '');
  if (headers.some(Boolean)) yield { rows: 0, texts: headers.map((header, i) => encode(i, header)) };
  for await (const page of pages) {
    const texts = page.texts.map((text, i) => encode(i, text));
    // A compressed text's bytes are done with now; a text stored as it is, once its file has it.
    for (const [i, text] of page.texts.entries()) {
      if (!files[i]!.gzip) continue;
      if (page.written) page.written(i);
      else if (typeof text !== 'string' && isPageMemory(text.buffer)) givePageBackToWrite(text.buffer);
    }
    const written = page.written && ((i: number) => void (files[i]!.gzip || page.written!(i)));
    yield { rows: page.rows, texts, ...(written ? { written } : {}) };
  }
  yield {
    rows: 0,
    texts: [],
    measured: measures.map((m) => ({ sha256: m.hash.digest('hex'), sizeBytes: m.sizeBytes })),
  };
}

/**
 * A page's text written straight into UTF-8 bytes of its own: a page of a large part as one string is a large object
 * for the garbage collector, a page at a time, in the thread that renders it and in the one that writes it; these
 * bytes are neither, and the worker that renders them hands them over without a copy (pagesInWorker).
 */
export class PageBytes {
  private bytes: Buffer;
  private written = 0;

  constructor(capacity = 64 * 1024) {
    // Not from Node's shared pool: the memory is this page's alone, so it can be transferred.
    this.bytes = takeWrittenPage(capacity) ?? Buffer.allocUnsafeSlow(capacity);
  }

  /** Forgets the bytes written, to write the buffer again (its bytes taken before are overwritten). */
  clear(): void {
    this.written = 0;
  }

  /** The bytes written so far. */
  get length(): number {
    return this.written;
  }

  write(text: string): void {
    // UTF-8 takes at most 3 bytes for each UTF-16 unit.
    this.reserve(text.length * 3);
    this.written += this.bytes.write(text, this.written, 'utf8');
  }

  /** Bytes as they are (a page of rows as PostgreSQL sent them, copyOutRows). */
  writeBytes(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.bytes.set(bytes, this.written);
    this.written += bytes.length;
  }

  /** The bytes written so far. */
  take(): Buffer {
    return this.bytes.subarray(0, this.written);
  }

  private reserve(more: number): void {
    if (this.written + more <= this.bytes.length) return;
    const larger = Buffer.allocUnsafeSlow(Math.max(this.written + more, this.bytes.length * 2));
    this.bytes.copy(larger, 0, 0, this.written);
    this.bytes = larger;
  }
}

/** Memory of a page's own (PageBytes), which can move between threads: never one of Node's shared pool. */
export const isPageMemory = (memory: ArrayBufferLike | undefined): memory is ArrayBuffer =>
  memory instanceof ArrayBuffer && memory.byteLength > Buffer.poolSize;

/**
 * Pages' memory handed back once written (givePageBackToWrite), for the next PageBytes of this thread: an export's
 * pages move between the same few buffers. A new buffer for each page is memory outside the heap that the garbage
 * collector counts until it has collected it, on both sides of the hand-over: every ~100 ms a full collection of the
 * service's heap, for nothing in it (docs/benchmarks.md, "An organization exported").
 */
const writtenPages: ArrayBuffer[] = [];
const WRITTEN_PAGES_KEPT = 8;

/** Keeps `memory`, a page written, for a PageBytes to come; the smallest goes when more than a few are kept. */
export function givePageBackToWrite(memory: ArrayBuffer): void {
  writtenPages.push(memory);
  if (writtenPages.length <= WRITTEN_PAGES_KEPT) return;
  let smallest = 0;
  for (let i = 1; i < writtenPages.length; i++)
    if (writtenPages[i]!.byteLength < writtenPages[smallest]!.byteLength) smallest = i;
  writtenPages.splice(smallest, 1);
}

let writtenPagesTaken = 0;

/** How many PageBytes of this thread began in memory given back (givePageBackToWrite). */
export const pagesWrittenAgain = () => writtenPagesTaken;

/** The smallest page kept that holds `capacity` bytes, taken; undefined when none does. */
function takeWrittenPage(capacity: number): Buffer | undefined {
  let best = -1;
  for (let i = 0; i < writtenPages.length; i++) {
    const size = writtenPages[i]!.byteLength;
    if (size >= capacity && (best < 0 || size < writtenPages[best]!.byteLength)) best = i;
  }
  if (best < 0) return undefined;
  writtenPagesTaken++;
  return Buffer.from(writtenPages.splice(best, 1)[0]!);
}

const asBuffer = (text: string | Uint8Array) =>
  typeof text === 'string' ? Buffer.from(text) : Buffer.from(text.buffer, text.byteOffset, text.byteLength);

/**
 * Writes several files of one part from a single pass over `pages` (the rows read once, each file its own rendering
 * of them), every file's store write running at the same time. Hand-over, not buffering: the next page is read only
 * once every file has taken the previous one, so each file holds at most a page in hand whatever the part's size. A
 * failed file (a full disk) stops the pass and fails the others; a failed pass fails every file; either way nothing is
 * left under their keys (ArchiveStore.put). A file with `gzip` is stored compressed, its text's size and SHA-256
 * counted before. With `encoded`, the pages come as stored (encodedPages, where the worker that renders them
 * compressed and measured them in the idle class): they are written as they are, and their measures, on the last
 * page, are the files'; pages that end without them store nothing. Pages not encoded for a file with `gzip` are
 * encoded here, on this thread.
 */
export async function writeExportFiles(
  store: ArchiveStore,
  exportId: string,
  files: readonly ExportFileSpec[],
  pages: AsyncIterable<ExportFilesPage>,
  encoded = false,
): Promise<ExportPartFile[]> {
  if (!encoded && files.some((file) => file.gzip))
    return writeExportFiles(store, exportId, files, encodedPages(files, pages), true);
  let textMeasures: ExportFilesPage['measured'];
  // A file whose write stopped reading (it failed) stops the pass; the others are ended with this, not their own fault.
  const stopped = new Error('another file of this export part could not be written');
  let failure: { error: unknown } | undefined;
  const stop = (error: unknown) => {
    if (error !== stopped) failure ??= { error };
    for (const handoff of handoffs) handoff.end(stopped);
  };
  const handoffs: Handoff[] = files.map(() => new Handoff(() => stop(stopped)));
  const writes = files.map(async (file, i): Promise<Omit<ExportPartFile, 'name' | 'rows'>> => {
    const key = exportPartKey(exportId, file.name);
    try {
      const stored = await store.put(key, handoffs[i]!.chunks());
      if (!encoded) return { sha256: stored.sha256, sizeBytes: stored.sizeBytes };
      return { ...textMeasures![i]!, ...(file.gzip ? { gzipBytes: stored.sizeBytes } : {}) };
    } catch (error) {
      stop(error);
      throw error;
    }
  });
  let rows = 0;
  let passFailure: { error: unknown } | undefined;
  try {
    const headers = files.map((file) => (encoded ? '' : (file.header ?? '')));
    await Promise.all(handoffs.map((handoff, i) => (headers[i] ? handoff.offer(Buffer.from(headers[i])) : null)));
    let fileFailed = false;
    for await (const page of pages) {
      if ((fileFailed = handoffs.some((handoff) => handoff.isEnded))) break;
      if (page.measured) {
        textMeasures = page.measured;
        continue;
      }
      rows += page.rows;
      await Promise.all(
        handoffs.map((handoff, i) => handoff.offer(asBuffer(page.texts[i]!), page.written && (() => page.written!(i)))),
      );
    }
    // Ending the files with this error leaves nothing stored: their measures are not to be had. (A file that failed
    // stopped the pass before them: its own error is the one to tell.)
    if (encoded && !fileFailed && textMeasures?.length !== files.length)
      throw new Error('the encoded pages ended without their measures');
    for (const handoff of handoffs) handoff.end();
  } catch (error) {
    passFailure = { error };
    for (const handoff of handoffs) handoff.end(error);
  }
  const settled = await Promise.allSettled(writes);
  const error = passFailure ?? failure ?? settled.find((s) => s.status === 'rejected');
  if (error) throw 'error' in error ? error.error : error.reason;
  return settled.map((s, i) => ({
    name: files[i]!.name,
    rows,
    ...(s as PromiseFulfilledResult<Omit<ExportPartFile, 'name' | 'rows'>>).value,
  }));
}

/**
 * An export's gzip, for its stored parts (writeExportFiles' `gzip`) and its archive (tarGz, services/users). The
 * fastest level: the work runs on cores other organizations' requests share, and an archive is downloaded once or
 * twice in its 7 days; at 10⁶ drives (bench:export, the whole archive compressed in its own phase then) it took 10.3 s
 * instead of the default level's 18.1 s, for 58.1 MB instead of 45.2. The output in chunks of 256 KiB, not 16: fewer
 * for the store's hashing and writes on the service's thread (docs/benchmarks.md).
 */
export const EXPORT_GZIP = { level: 1, chunkSize: 256 * 1024 } as const;

/**
 * One chunk at a time from a producer to a consumer (a store's write): `offer` resolves once the consumer has taken
 * the chunk, or at once when it has stopped reading; `end` finishes the consumer's chunks, with an error if given.
 */
class Handoff {
  private offered?: { chunk: Buffer; taken: () => void; written?: () => void };
  private taker?: { resolve: (chunk: Buffer | undefined) => void; reject: (error: unknown) => void };
  private ended?: { error?: unknown };
  private abandoned = false;
  /** The `written` of the chunk the consumer holds. */
  private inHand?: () => void;

  /** `onAbandoned`: the consumer stopped reading before the end (its write failed). */
  constructor(private readonly onAbandoned: () => void) {}

  get isEnded(): boolean {
    return this.ended !== undefined;
  }

  /** `written`: called once the consumer is done with the chunk (it asked for the next, or stopped). */
  offer(chunk: Buffer, written?: () => void): Promise<void> {
    if (this.abandoned || this.ended) return Promise.resolve();
    if (this.taker) {
      const taker = this.taker;
      this.taker = undefined;
      this.inHand = written;
      taker.resolve(chunk);
      return Promise.resolve();
    }
    return new Promise((taken) => (this.offered = { chunk, taken, written }));
  }

  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = error === undefined ? {} : { error };
    const taker = this.taker;
    this.taker = undefined;
    if (taker) this.settle(taker);
    // A chunk offered and not taken is dropped: the write it was for has ended.
    this.offered?.taken();
    this.offered = undefined;
  }

  async *chunks(): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        const chunk = await this.take();
        if (chunk === undefined) return;
        yield chunk;
        // Asked for the next: done with this one (ArchiveStore.put).
        this.release();
      }
    } finally {
      this.release();
      this.abandoned = true;
      this.offered?.taken();
      this.offered = undefined;
      if (!this.ended) this.onAbandoned();
    }
  }

  private release(): void {
    const written = this.inHand;
    this.inHand = undefined;
    written?.();
  }

  private take(): Promise<Buffer | undefined> {
    if (this.offered) {
      const { chunk, taken, written } = this.offered;
      this.offered = undefined;
      this.inHand = written;
      taken();
      return Promise.resolve(chunk);
    }
    return new Promise((resolve, reject) => {
      const taker = { resolve, reject };
      if (this.ended) this.settle(taker);
      else this.taker = taker;
    });
  }

  private settle(taker: { resolve: (chunk: undefined) => void; reject: (error: unknown) => void }) {
    if (this.ended?.error !== undefined) taker.reject(this.ended.error);
    else taker.resolve(undefined);
  }
}
