// The archive check on archives made by GNU tar (`tar --format=ustar -czf`, another writer than the platform's): a
// matching archive is read with each file's size and rows, and every way it can disagree with its manifest is named.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { ArchiveVerificationError, EXPORT_FORMAT, verifyArchive, type Manifest } from './archive';

const dir = mkdtempSync(path.join(tmpdir(), 'payroll-archive-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const sha256 = (bytes: string | Buffer) => createHash('sha256').update(bytes).digest('hex');
// Sizes on both sides of tar's 512-byte blocks, and an empty file.
const USERS = Array.from({ length: 40 }, (_, i) => `{"id":"User${i}","userName":"user${i}@example.com"}\n`).join('');
const DRIVES = 'drive_id,driver_id\n1,User1\n';
const FILES: Record<string, string> = { 'users.jsonl': USERS, 'reported_drives.csv': DRIVES, 'webhooks.jsonl': '' };

const manifestOf = (files: Record<string, string>, overrides: Partial<Manifest> = {}): Manifest => ({
  format: EXPORT_FORMAT,
  organization: { id: '1', name: 'Demo Org' },
  requested_at: '2026-11-28T09:00:00.000Z',
  as_of: '2026-11-28T09:00:01.000Z',
  files: Object.entries(files).map(([name, body]) => ({
    name,
    rows: body.split('\n').filter(Boolean).length,
    sha256: sha256(body),
  })),
  ...overrides,
});

let made = 0;
/** A tar.gz holding `files` (and `manifest.json` unless it is null), as GNU tar writes it. */
function archive(files: Record<string, string>, manifest: Manifest | null | string = manifestOf(files)): string {
  const folder = path.join(dir, `a${++made}`);
  mkdirSync(folder);
  const names = Object.keys(files);
  if (manifest !== null) {
    writeFileSync(
      path.join(folder, 'manifest.json'),
      typeof manifest === 'string' ? manifest : JSON.stringify(manifest),
    );
    names.unshift('manifest.json');
  }
  for (const [name, body] of Object.entries(files)) writeFileSync(path.join(folder, name), body);
  const file = path.join(dir, `a${made}.tar.gz`);
  execFileSync('tar', ['--format=ustar', '-czf', file, '-C', folder, ...names]);
  return file;
}

const refused = async (file: string, pattern: RegExp) => {
  const err = await verifyArchive(file).then(
    () => assert.fail('the archive was accepted'),
    (e: Error) => e,
  );
  assert.ok(err instanceof ArchiveVerificationError, String(err));
  assert.match(err.message, pattern);
};

test('an archive that matches its manifest: every file with its rows, size and SHA-256', async () => {
  const verified = await verifyArchive(archive(FILES));
  assert.equal(verified.manifest.organization.name, 'Demo Org');
  assert.deepEqual(verified.files, [
    { name: 'users.jsonl', rows: 40, bytes: Buffer.byteLength(USERS), sha256: sha256(USERS) },
    { name: 'reported_drives.csv', rows: 2, bytes: Buffer.byteLength(DRIVES), sha256: sha256(DRIVES) },
    { name: 'webhooks.jsonl', rows: 0, bytes: 0, sha256: sha256('') },
  ]);
});

test('a file whose bytes are not the ones the manifest vouches for is named with both SHA-256s', async () => {
  const changed = { ...FILES, 'users.jsonl': USERS.replace('user7@', 'someone@') };
  await refused(archive(changed, manifestOf(FILES)), /users\.jsonl: SHA-256 [0-9a-f]{64}, the manifest says /);
});

test('a listed file that is missing and a file the manifest does not list are both named', async () => {
  const { 'webhooks.jsonl': _dropped, ...fewer } = FILES;
  const file = archive({ ...fewer, 'extra.jsonl': '{}\n' }, manifestOf(FILES));
  await refused(
    file,
    /webhooks\.jsonl: listed in the manifest, not in the archive\n\s+extra\.jsonl: in the archive, not/,
  );
});

test('no manifest, a manifest that is not JSON, or one of another format is refused', async () => {
  await refused(archive(FILES, null), /has no manifest\.json/);
  await refused(archive(FILES, '{"format":'), /manifest\.json is not JSON/);
  await refused(archive(FILES, manifestOf(FILES, { format: 'mileage-export/2' })), /of format mileage-export\/2/);
});

test('an archive cut short, a gzip of something else, and a corrupt header are refused', async () => {
  const whole = readFileSync(archive(FILES));
  const cut = path.join(dir, 'cut.tar.gz');
  writeFileSync(cut, whole.subarray(0, Math.floor(whole.length / 2)));
  await refused(cut, /cannot be read|cut short/);
  const plain = path.join(dir, 'plain.gz');
  writeFileSync(plain, gzipSync(Buffer.alloc(1024, 'x')));
  await refused(plain, /not a tar archive/);
  // The same archive with one byte of the first header's name changed: its checksum no longer adds up.
  const tar = execFileSync('gzip', ['-dc'], { input: whole });
  tar[0] = tar[0]! ^ 1;
  const corrupt = path.join(dir, 'corrupt.tar.gz');
  writeFileSync(corrupt, gzipSync(tar));
  await refused(corrupt, /wrong checksum/);
});
