import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, mkdir, open, rename, rm, rmdir, stat } from 'node:fs/promises';
import * as path from 'node:path';
import type { Readable } from 'node:stream';

/** Bytes `start`..`end` of an object, both included (an HTTP Range). */
export interface ByteRange {
  start: number;
  end: number;
}

/** What was stored: its size and SHA-256 (hex), computed while it was written. */
export interface StoredObject {
  sizeBytes: number;
  sha256: string;
}

/**
 * Where export archives are kept: local disk under `npm start` (LocalArchiveStore, DATA_DIR), S3-compatible object
 * storage in Kubernetes. An object is visible only once it is written whole: a write that fails (a full disk, a store
 * that stops answering) leaves nothing under its key, so nothing partial is ever served.
 */
export interface ArchiveStore {
  /**
   * Writes `body` under `key`, replacing what was there; rejects (leaving nothing) when it cannot be written whole.
   * It asks for the next chunk only once it is done with the one before: a writer may then use that chunk's memory
   * again (an export's pages are written into the same buffers over and over, pagesInWorker).
   */
  put(key: string, body: AsyncIterable<Uint8Array>): Promise<StoredObject>;
  /** The object's bytes, or the range of them. Rejects with code ENOENT when there is no such object. */
  get(key: string, range?: ByteRange): Promise<Readable>;
  /**
   * The range of the object read into `into` (as much of it as fits), answering how many bytes it holds: fewer than
   * asked only where the object ends. Rejects with code ENOENT when there is no such object. A download's reads use
   * it (ReadExportArchive): into memory of the caller's, so a read of 1 MiB is not a fresh buffer of 1 MiB.
   */
  read(key: string, range: ByteRange, into: Uint8Array): Promise<number>;
  /** The object's size, or undefined when there is none. */
  size(key: string): Promise<number | undefined>;
  /** Removes the object (nothing when there is none). */
  delete(key: string): Promise<void>;
}

/**
 * The size of the chunks an object is read in (the read stream's default is 64 KiB): an export's parts by its archive
 * assembly (LocalArchiveStore.get, readInChunks). Reading 460 MB of parts back through gzip took 2.5–2.6 s of CPU,
 * 0.83–0.87 s on the service's thread; in chunks of 1 MiB (and gzip's output in 256 KiB, EXPORT_GZIP), 1.5–1.6 s and
 * 0.26 s (docs/benchmarks.md).
 */
const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * An object's `size` bytes in chunks read into one piece of memory, the next read only once the one before was taken:
 * for a writer that is done with a chunk when it asks for the next, as ArchiveStore.put is (an archive's stored parts
 * copied into it). A fresh buffer a chunk is memory the process's collector counts toward its next full collection:
 * 58 of them for the Drives part read back (docs/benchmarks.md, "A download's reads in memory of the Users service's
 * own").
 */
export async function* readInChunks(store: ArchiveStore, key: string, size: number): AsyncGenerator<Uint8Array> {
  const memory = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, size));
  for (let offset = 0; offset < size;) {
    const end = Math.min(offset + memory.length, size) - 1;
    const read = await store.read(key, { start: offset, end }, memory);
    if (read === 0) throw new Error(`${key} ended at ${offset} bytes, before ${size}`);
    yield memory.subarray(0, read);
    offset += read;
  }
}

const KEY = /^[a-z0-9][a-z0-9._-]*(\/[a-z0-9][a-z0-9._-]*)*$/;

/** Refuses a key that could leave the store's root (`..`, absolute paths) or that no store spells alike. */
export function checkKey(key: string): string {
  if (!KEY.test(key) || key.split('/').some((part) => part === '..' || part === '.'))
    throw new Error(`not an archive key: ${key}`);
  return key;
}

/** Hashes and counts the bytes that pass through, for `put`. */
export async function* measured(
  body: AsyncIterable<Uint8Array>,
  into: { sizeBytes: number; hash: ReturnType<typeof createHash> },
): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) {
    into.sizeBytes += chunk.length;
    into.hash.update(chunk);
    yield chunk;
  }
}

/** Writes all of `chunk` at the file's position: a write may take fewer bytes than it was given. */
async function writeWhole(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  for (let offset = 0; offset < chunk.length;) {
    const { bytesWritten } = await handle.write(chunk, offset);
    if (bytesWritten === 0) throw new Error('the archive file took no bytes');
    offset += bytesWritten;
  }
}

/** Objects as files under `root` (DATA_DIR/…): written beside their name, then renamed into place. */
export class LocalArchiveStore implements ArchiveStore {
  readonly root: string;

  constructor(root: string) {
    // Absolute and normalised: the folders a delete prunes are compared with it.
    this.root = path.resolve(root);
  }

  private file(key: string): string {
    return path.join(this.root, checkKey(key));
  }

  async put(key: string, body: AsyncIterable<Uint8Array>): Promise<StoredObject> {
    const file = this.file(key);
    await mkdir(path.dirname(file), { recursive: true });
    // A name no reader asks for; renamed over the key only once every byte is on disk.
    const partial = `${file}.partial-${randomUUID()}`;
    const counted = { sizeBytes: 0, hash: createHash('sha256') };
    // Opened before the copy starts: a stream opening its file itself may create it after a failed copy's cleanup.
    const handle = await open(partial, 'w');
    try {
      try {
        // One chunk at a time, each written whole before the next is asked for (put's promise to its writer).
        for await (const chunk of measured(body, counted)) await writeWhole(handle, chunk);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(partial, file);
    } catch (err) {
      await rm(partial, { force: true });
      await this.pruneFrom(path.dirname(file));
      throw err;
    }
    return { sizeBytes: counted.sizeBytes, sha256: counted.hash.digest('hex') };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const file = this.file(key);
    // Opened before it is returned, so a missing object rejects here (ENOENT) rather than in the reader's stream.
    await stat(file);
    return createReadStream(file, {
      highWaterMark: READ_CHUNK_BYTES,
      ...(range && { start: range.start, end: range.end }),
    });
  }

  async read(key: string, range: ByteRange, into: Uint8Array): Promise<number> {
    const handle = await open(this.file(key), 'r');
    try {
      const wanted = Math.min(into.length, range.end + 1 - range.start);
      let done = 0;
      while (done < wanted) {
        const { bytesRead } = await handle.read(into, done, wanted - done, range.start + done);
        if (bytesRead === 0) break; // the file ends here
        done += bytesRead;
      }
      return done;
    } finally {
      await handle.close();
    }
  }

  async size(key: string): Promise<number | undefined> {
    try {
      return (await stat(this.file(key))).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  /** Removes the file, and the folders it leaves empty (below the root): an export leaves no trace behind. */
  async delete(key: string): Promise<void> {
    const file = this.file(key);
    await rm(file, { force: true });
    await this.pruneFrom(path.dirname(file));
  }

  /** Removes `dir` and the folders above it (below the root) while they are empty. */
  private async pruneFrom(dir: string): Promise<void> {
    for (; dir.startsWith(`${this.root}${path.sep}`); dir = path.dirname(dir)) {
      try {
        await rmdir(dir);
      } catch {
        return; // not empty (or already gone): the folders above hold something too
      }
    }
  }
}
