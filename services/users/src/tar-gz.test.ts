import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { test } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { tarGz, type TarEntry } from './tar-gz';

const entry = (name: string, content: string): TarEntry => ({
  name,
  size: Buffer.byteLength(content),
  body: async () => [Buffer.from(content)],
});

test('the archive is one the system tar reads back, file by file', async () => {
  const big = 'x'.repeat(1_000) + '\n';
  const archive = await buffer(tarGz([entry('manifest.json', '{"a":1}\n'), entry('users.jsonl', big)], Date.now()));
  const dir = mkdtempSync(path.join(tmpdir(), 'tar-gz-'));
  try {
    writeFileSync(path.join(dir, 'a.tar.gz'), archive);
    assert.deepEqual(execFileSync('tar', ['-tzf', 'a.tar.gz'], { cwd: dir }).toString().trim().split('\n'), [
      'manifest.json',
      'users.jsonl',
    ]);
    execFileSync('tar', ['-xzf', 'a.tar.gz'], { cwd: dir });
    assert.equal(readFileSync(path.join(dir, 'manifest.json'), 'utf8'), '{"a":1}\n');
    assert.equal(readFileSync(path.join(dir, 'users.jsonl'), 'utf8'), big);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a part whose size differs from its header fails the archive', async () => {
  const wrong: TarEntry = { name: 'a.jsonl', size: 10, body: async () => [Buffer.from('short')] };
  await assert.rejects(buffer(tarGz([wrong], Date.now())), /5 bytes, 10 expected/);
});

test('a part stored as gzip members is copied in as it is, between entries compressed here', async () => {
  const lines = ['{"n":1}\n', '{"n":2}\n'.repeat(300), ''];
  const members = lines.map((line) => gzipSync(line));
  const stored: TarEntry = {
    name: 'reported_drives.jsonl',
    size: Buffer.byteLength(lines.join('')),
    gzipBytes: members.reduce((sum, m) => sum + m.length, 0),
    body: async () => members,
  };
  const entries = [entry('manifest.json', '{"a":1}\n'), stored, entry('users.jsonl', 'u\n')];
  const archive = await buffer(tarGz(entries, Date.now()));
  for (const member of members) assert.ok(archive.includes(member), 'each stored member is in the archive whole');
  const dir = mkdtempSync(path.join(tmpdir(), 'tar-gz-'));
  try {
    writeFileSync(path.join(dir, 'a.tar.gz'), archive);
    execFileSync('tar', ['-xzf', 'a.tar.gz'], { cwd: dir });
    assert.equal(readFileSync(path.join(dir, 'reported_drives.jsonl'), 'utf8'), lines.join(''));
    assert.equal(readFileSync(path.join(dir, 'users.jsonl'), 'utf8'), 'u\n');
    assert.equal(gunzipSync(archive).length % 512, 0, 'whole tar blocks');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const short: TarEntry = { ...stored, gzipBytes: stored.gzipBytes! + 1 };
  await assert.rejects(buffer(tarGz([short], Date.now())), /bytes, \d+ expected/);
});
