// A person's own copy, GET /v1/users/me/export (CONTRACT §8), through the real gateway and services: the profile,
// then every drive of the caller in JSON Lines, read by a slow reader; two scopes; two copies an hour.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import http from 'node:http';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { startHarness, type Harness } from './harness';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

/** Reads the copy over a real connection, taking one chunk per turn of the event loop (a slow reader). */
async function readSlowly(app: http.RequestListener, token: string) {
  const server = http.createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http
        .get({ port, host: '127.0.0.1', path: '/v1/users/me/export', headers: { Authorization: `Bearer ${token}` } })
        .on('response', resolve)
        .on('error', reject),
    );
    res.pause();
    const chunks: Buffer[] = [];
    for (;;) {
      const chunk = res.read() as Buffer | null;
      if (chunk) {
        chunks.push(chunk);
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      if (res.readableEnded) break;
      await Promise.race([once(res, 'readable'), once(res, 'end')]);
    }
    return { status: res.statusCode, type: res.headers['content-type'], text: Buffer.concat(chunks).toString('utf8') };
  } finally {
    server.close();
  }
}

test('the copy: the caller’s profile, then every drive of theirs, every classification, first recorded first', async () => {
  const token = await h.token('bob@example.com', 'users_read drives_read');
  const app = h.app();
  const copy = await readSlowly(app, token);
  assert.equal(copy.status, 200);
  assert.equal(copy.type, 'application/x-ndjson');
  assert.ok(copy.text.endsWith('\n'));
  const lines = copy.text
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as { user?: unknown; drive?: { drive_id: number } });
  const me = await request(app).get('/v1/users/me').set('Authorization', `Bearer ${token}`).expect(200);
  assert.deepEqual(lines[0], { user: me.body });
  const all = await request(app)
    .get('/v1/users/BobDriver1/drives?classification=all&limit=1000')
    .set('Authorization', `Bearer ${token}`)
    .expect(200);
  const expected = [...all.body.results].sort((a, b) => a.drive_id - b.drive_id);
  assert.deepEqual(
    lines.slice(1).map((line) => line.drive),
    expected,
  );
  assert.equal(expected.length, h.drives.bobBusiness.length + h.drives.bobPersonal.length);
});

test('both scopes are needed: 403 naming them', async () => {
  const token = await h.token('bob@example.com', 'drives_read');
  const res = await request(h.app()).get('/v1/users/me/export').set('Authorization', `Bearer ${token}`).expect(403);
  assert.match(String(res.headers['www-authenticate']), /scope="users_read drives_read"/);
});

test('two copies an hour per person: the third is 429 with the hour’s window', async () => {
  const token = await h.token('alice@example.com', 'users_read drives_read');
  const app = h.app();
  const ask = () => request(app).get('/v1/users/me/export').set('Authorization', `Bearer ${token}`);
  await ask().expect(200);
  const second = await ask().expect(200);
  assert.equal(second.headers['ratelimit-policy'], '"per-hour";q=2;w=3600');
  const third = await ask().expect(429);
  assert.ok(Number(third.headers['retry-after']) > 60);
  assert.match(third.body.detail, /2 requests per hour/);
});
