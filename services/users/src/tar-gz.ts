import { EXPORT_GZIP } from '@mileage/runtime/storage';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

/** A file of an archive: its name, its exact size, and its bytes when the archive reaches it. */
export interface TarEntry {
  name: string;
  size: number;
  /**
   * The body is gzip members of this many bytes, holding the file's `size` bytes (a part stored compressed,
   * writeExportFiles' `gzip`): copied into the archive as they are. Absent: the body is the file's bytes.
   */
  gzipBytes?: number;
  body(): Promise<Iterable<Uint8Array> | AsyncIterable<Uint8Array>>;
}

const BLOCK = 512;

/** A POSIX ustar header of a regular file (names of the export are short ASCII: no long-name extension needed). */
export function ustarHeader(name: string, size: number, mtimeMs: number): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`tar entry name too long: ${name}`);
  if (size >= 8 ** 11) throw new Error(`tar entry too large: ${name}`);
  const header = Buffer.alloc(BLOCK);
  const octal = (value: number, width: number) => `${value.toString(8).padStart(width - 1, '0')}\0`;
  header.write(name, 0, 100, 'utf8');
  header.write(octal(0o644, 8), 100);
  header.write(octal(0, 8), 108);
  header.write(octal(0, 8), 116);
  header.write(octal(size, 12), 124);
  header.write(octal(Math.floor(mtimeMs / 1000), 12), 136);
  header.write(' '.repeat(8), 148);
  header.write('0', 156);
  header.write('ustar\0', 257);
  header.write('00', 263);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return header;
}

/** The tar stream of `entries` in pieces: bytes of the stream, or gzip members of them; each entry's read as reached. */
async function* tarPieces(entries: readonly TarEntry[], mtimeMs: number): AsyncGenerator<TarPiece> {
  for (const entry of entries) {
    yield { bytes: ustarHeader(entry.name, entry.size, mtimeMs) };
    const stored = entry.gzipBytes ?? entry.size;
    let written = 0;
    for await (const chunk of await entry.body()) {
      written += chunk.length;
      yield entry.gzipBytes === undefined ? { bytes: chunk } : { gzip: chunk };
    }
    // The header promised the size: a part that changed under us would make a corrupt archive.
    if (written !== stored) throw new Error(`${entry.name}: ${written} bytes, ${stored} expected`);
    const padding = (BLOCK - (entry.size % BLOCK)) % BLOCK;
    if (padding) yield { bytes: Buffer.alloc(padding) };
  }
  yield { bytes: Buffer.alloc(2 * BLOCK) };
}

type TarPiece = { bytes: Uint8Array } | { gzip: Uint8Array };

/**
 * The gzip of the tar stream of `entries`, read as it is compressed: a series of gzip members, one stream of the tar's
 * bytes to any reader of gzip (RFC 1952, 2.2). The entries' own bytes and their headers are compressed here; an
 * entry stored as gzip members is copied as it is, not compressed again.
 */
export async function* tarGz(entries: readonly TarEntry[], mtimeMs: number): AsyncGenerator<Uint8Array> {
  const pieces = tarPieces(entries, mtimeMs);
  const at = { piece: await pieces.next() };
  try {
    while (!at.piece.done) {
      const piece = at.piece.value;
      if ('gzip' in piece) {
        yield piece.gzip;
        at.piece = await pieces.next();
        continue;
      }
      const gzip = createGzip(EXPORT_GZIP);
      // An error of the tar stream (a part that cannot be read) destroys the gzip stream, whose reading throws it.
      pipeline(Readable.from(bytesUpToStored(pieces, at)), gzip).catch(() => {});
      yield* gzip;
    }
  } finally {
    await pieces.return(undefined);
  }
}

/** The bytes from the piece `at` up to the next stored gzip member (or the end), where `at` is left. */
async function* bytesUpToStored(pieces: AsyncGenerator<TarPiece>, at: { piece: IteratorResult<TarPiece> }) {
  for (; !at.piece.done && 'bytes' in at.piece.value; at.piece = await pieces.next()) yield at.piece.value.bytes;
}
