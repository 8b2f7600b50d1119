// The export helpers against an HTTP server that answers as CONTRACT §8 says (202, 409, status, the archive with
// Range), and breaks the first download's connection half way: the download resumes where the file ends.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { createMileageClient, type MileageClient } from './client';
import { downloadExport, requestExport, waitForExport, type Export } from './exports';

const ARCHIVE = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256));
const SHA256 = createHash('sha256').update(ARCHIVE).digest('hex');
const ID = '5b0f6c2e-8d4a-4f1e-9a7b-3c2d1e0f9a8b';
let looks = 0;
let downloads: { range: string | undefined; ifRange: string | undefined }[] = [];
let server: http.Server;
let baseUrl: string;
let client: MileageClient;
const dir = mkdtempSync(path.join(tmpdir(), 'client-exports-'));
const file = path.join(dir, 'archive.tar.gz');
/** The first download breaks only once its first bytes are in the file: what the resume starts from is known. */
let firstBytesArrived!: () => void;
const firstBytes = new Promise<void>((resolve) => (firstBytesArrived = resolve));
async function firstBytesInFile(): Promise<void> {
  await firstBytes;
  while (!existsSync(file) || statSync(file).size === 0) await new Promise((resolve) => setImmediate(resolve));
}

const exported = (status: Export['status'], rows: number): Export => ({
  id: ID,
  status,
  requested_at: '2026-11-28T09:00:00.000Z',
  completed_at: status === 'completed' ? '2026-11-28T09:01:00.000Z' : null,
  expires_at: status === 'completed' ? '2026-12-05T09:01:00.000Z' : null,
  progress: { phase: status === 'completed' ? 'done' : 'users', rows },
  size_bytes: status === 'completed' ? ARCHIVE.length : null,
  sha256: status === 'completed' ? SHA256 : null,
  failure_reason: null,
});

before(async () => {
  server = http.createServer((req, res) => {
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method === 'POST' && req.url === '/v1/organization/exports')
      return json(409, { detail: 'running', type: '/errors/export-running', title: 'Conflict', status: 409 });
    if (req.url === '/v1/organization/exports') return json(200, { results: [exported('running', 10)] });
    if (req.url === `/v1/organization/exports/${ID}`)
      return json(200, ++looks < 3 ? exported('running', looks * 100) : exported('completed', 1_000));
    if (req.url === `/v1/organization/exports/${ID}/archive`) {
      downloads.push({ range: req.headers.range, ifRange: req.headers['if-range'] as string | undefined });
      const start = Number(/^bytes=(\d+)-$/.exec(req.headers.range ?? '')?.[1] ?? 0);
      if (start >= ARCHIVE.length)
        return res
          .writeHead(416, { etag: `"${SHA256}"`, 'content-range': `bytes */${ARCHIVE.length}` })
          .end(JSON.stringify({ detail: 'The range lies outside the archive', status: 416 }));
      const body = ARCHIVE.subarray(start);
      res.writeHead(start ? 206 : 200, {
        'content-type': 'application/gzip',
        etag: `"${SHA256}"`,
        'content-length': body.length,
        ...(start ? { 'content-range': `bytes ${start}-${ARCHIVE.length - 1}/${ARCHIVE.length}` } : {}),
      });
      // The first download breaks a third of the way in, once the client has written some of it.
      if (downloads.length === 1) {
        res.write(body.subarray(0, 100_000), () => void firstBytesInFile().then(() => res.destroy()));
        return;
      }
      return res.end(body);
    }
    json(404, { detail: 'Not found' });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = createMileageClient({ baseUrl, token: 'admin-token' });
});
after(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a request while one runs answers the running one; waiting reports its progress until it completes', async () => {
  assert.deepEqual(await requestExport(client), { id: ID, alreadyRunning: true });
  const seen: number[] = [];
  const done = await waitForExport(client, ID, { intervalMs: 1, onProgress: (e) => seen.push(e.progress.rows) });
  assert.equal(done.status, 'completed');
  assert.deepEqual(seen, [100, 200, 1_000]);
});

test('a download broken half way resumes with Range where the file ends, and is checked against its SHA-256', async () => {
  downloads = [];
  const sha256 = await downloadExport(ID, file, {
    baseUrl,
    token: 'admin-token',
    retryDelayMs: 1,
    onBytes: (received) => received > 0 && firstBytesArrived(),
  });
  assert.equal(sha256, SHA256);
  assert.ok(readFileSync(file).equals(ARCHIVE));
  assert.equal(downloads.length, 2);
  assert.equal(downloads[0]!.range, undefined);
  assert.match(downloads[1]!.range!, /^bytes=\d+-$/);
  assert.ok(Number(/\d+/.exec(downloads[1]!.range!)![0]) > 0, 'it resumed, not restarted');
  assert.equal(downloads[1]!.ifRange, `"${SHA256}"`);
});

test('a file that already holds the whole archive (a run stopped after its last byte): 416, checked, kept', async () => {
  downloads = [];
  assert.equal(statSync(file).size, ARCHIVE.length);
  assert.equal(await downloadExport(ID, file, { baseUrl, token: 'admin-token' }), SHA256);
  assert.deepEqual(downloads, [{ range: `bytes=${ARCHIVE.length}-`, ifRange: undefined }]);
  assert.ok(readFileSync(file).equals(ARCHIVE));
});
