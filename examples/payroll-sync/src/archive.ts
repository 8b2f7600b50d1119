import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';

/**
 * Checks an organization export's archive (CONTRACT §8): a tar.gz whose `manifest.json` lists every other file with
 * its rows and SHA-256. The archive is read once as a stream (it may be large), each file hashed as it passes.
 */

export const EXPORT_FORMAT = 'mileage-export/1';

export interface Manifest {
  format: string;
  organization: { id: string; name: string };
  requested_at: string;
  as_of: string;
  files: { name: string; rows: number; sha256: string }[];
}

export interface VerifiedFile {
  name: string;
  rows: number;
  sha256: string;
  bytes: number;
}

export interface VerifiedArchive {
  manifest: Manifest;
  files: VerifiedFile[];
}

export class ArchiveVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveVerificationError';
  }
}

const BLOCK = 512;
const MANIFEST = 'manifest.json';

interface Entry {
  name: string;
  remaining: number;
  padding: number;
  bytes: number;
  hash: Hash;
  /** Kept only for the manifest (small); every other file is hashed and dropped. */
  kept?: Buffer[];
  regular: boolean;
}

const field = (header: Buffer, start: number, length: number) =>
  header.toString('utf8', start, start + length).replace(/\0.*$/s, '');

/** A ustar header (POSIX.1-1988, what the platform writes and GNU tar's --format=ustar): name, size, type. */
function entryOf(header: Buffer): Entry {
  if (field(header, 257, 5) !== 'ustar') throw new ArchiveVerificationError('not a tar archive (no ustar header)');
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i]!;
  if (sum !== parseInt(field(header, 148, 8).trim(), 8))
    throw new ArchiveVerificationError('a tar header has a wrong checksum (a corrupt archive)');
  const prefix = field(header, 345, 155);
  const name = prefix ? `${prefix}/${field(header, 0, 100)}` : field(header, 0, 100);
  const size = parseInt(field(header, 124, 12).trim() || '0', 8);
  const type = field(header, 156, 1);
  return {
    name,
    remaining: size,
    padding: (BLOCK - (size % BLOCK)) % BLOCK,
    bytes: size,
    hash: createHash('sha256'),
    ...(name === MANIFEST ? { kept: [] } : {}),
    regular: type === '' || type === '0',
  };
}

/** Every regular file of a tar.gz with its SHA-256 and size, and the manifest's bytes. */
async function readTarGz(file: string): Promise<{ files: Map<string, VerifiedFile>; manifest?: Buffer }> {
  const files = new Map<string, VerifiedFile>();
  let manifest: Buffer | undefined;
  let header = Buffer.alloc(0);
  let entry: Entry | undefined;
  let ended = false;
  const finish = (done: Entry) => {
    if (!done.regular) return;
    if (files.has(done.name)) throw new ArchiveVerificationError(`${done.name} is in the archive twice`);
    files.set(done.name, { name: done.name, rows: 0, sha256: done.hash.digest('hex'), bytes: done.bytes });
    if (done.kept) manifest = Buffer.concat(done.kept);
  };
  for await (const chunk of createReadStream(file).pipe(createGunzip()) as AsyncIterable<Buffer>) {
    let rest = chunk;
    while (rest.length > 0 && !ended) {
      if (entry && entry.remaining > 0) {
        const data = rest.subarray(0, entry.remaining);
        entry.hash.update(data);
        entry.kept?.push(data);
        entry.remaining -= data.length;
        rest = rest.subarray(data.length);
      } else if (entry && entry.padding > 0) {
        const skipped = Math.min(entry.padding, rest.length);
        entry.padding -= skipped;
        rest = rest.subarray(skipped);
      } else if (entry) {
        finish(entry);
        entry = undefined;
      } else {
        const wanted = BLOCK - header.length;
        header = Buffer.concat([header, rest.subarray(0, wanted)]);
        rest = rest.subarray(wanted);
        if (header.length < BLOCK) break;
        // Two zero blocks end the archive; the first is enough to know it ended.
        if (header.every((byte) => byte === 0)) ended = true;
        else entry = entryOf(header);
        header = Buffer.alloc(0);
      }
    }
  }
  if (entry && entry.remaining === 0 && entry.padding === 0) finish(entry);
  else if (entry || !ended)
    throw new ArchiveVerificationError('the archive is cut short (its tar stream does not end)');
  return { files, ...(manifest ? { manifest } : {}) };
}

function parseManifest(bytes: Buffer | undefined): Manifest {
  if (!bytes) throw new ArchiveVerificationError(`the archive has no ${MANIFEST}`);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(bytes.toString('utf8')) as Manifest;
  } catch {
    throw new ArchiveVerificationError(`${MANIFEST} is not JSON`);
  }
  if (manifest.format !== EXPORT_FORMAT)
    throw new ArchiveVerificationError(`${MANIFEST} is of format ${String(manifest.format)}, not ${EXPORT_FORMAT}`);
  if (!Array.isArray(manifest.files)) throw new ArchiveVerificationError(`${MANIFEST} lists no files`);
  return manifest;
}

/**
 * Reads the archive and checks it against its manifest: every listed file is there with the listed SHA-256, and
 * nothing else is (a file the manifest does not vouch for is refused too). Throws `ArchiveVerificationError` naming
 * every mismatch.
 */
export async function verifyArchive(file: string): Promise<VerifiedArchive> {
  const read = await readTarGz(file).catch((err: Error) => {
    if (err instanceof ArchiveVerificationError) throw err;
    throw new ArchiveVerificationError(`the archive cannot be read: ${err.message}`);
  });
  const manifest = parseManifest(read.manifest);
  const problems: string[] = [];
  const files: VerifiedFile[] = [];
  for (const listed of manifest.files) {
    const found = read.files.get(listed.name);
    if (!found) problems.push(`${listed.name}: listed in the manifest, not in the archive`);
    else if (found.sha256 !== listed.sha256)
      problems.push(`${listed.name}: SHA-256 ${found.sha256}, the manifest says ${listed.sha256}`);
    else files.push({ ...found, rows: listed.rows });
  }
  const listed = new Set(manifest.files.map((f) => f.name));
  for (const name of read.files.keys())
    if (name !== MANIFEST && !listed.has(name)) problems.push(`${name}: in the archive, not in the manifest`);
  if (problems.length)
    throw new ArchiveVerificationError(`the archive does not match its manifest:\n  ${problems.join('\n  ')}`);
  return { manifest, files };
}
