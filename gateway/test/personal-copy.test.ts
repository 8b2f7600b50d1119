// A person's own copy, GET /v1/users/me/export (CONTRACT §8), through the real gateway and services: the profile,
// then every drive of the caller in JSON Lines, read by a slow reader; a reader that stops keeps the gateway from
// reading ahead (tens of MB, counted in the pages the gateway asks the Drives service for), and a drive changed
// meanwhile is neither lost nor doubled; two scopes; two copies an hour.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { GLOBEX, startHarness, type Harness } from './harness';

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

/** Resolves once `condition` holds, looking again after each turn of the event loop (its I/O included). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

/** Resolves once `res` has more to read or has ended (its listeners removed again: a reader waits thousands of times). */
function readableOrEnded(res: http.IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    const settle = () => {
      res.off('readable', settle);
      res.off('end', settle);
      resolve();
    };
    res.on('readable', settle);
    res.on('end', settle);
  });
}

/**
 * The most bytes the kernel holds between the gateway and a reader over a Unix socket: the sender's send buffer (a
 * Unix socket has no receive window of its own, and none grows it, unlike TCP's autotuning up to tcp_rmem, tens of MB
 * on loopback), at most net.core.wmem_max.
 */
function kernelBufferBytes(): number {
  try {
    return Number(readFileSync('/proc/sys/net/core/wmem_max', 'utf8').trim());
  } catch {
    return 4 * 1_048_576;
  }
}

test('a reader that stops reading stops the gateway: it asks the Drives service for pages only as the reader takes them, and a drive changed meanwhile is neither lost nor doubled', async (t) => {
  // Frank gets enough drives that his copy is tens of MB, recorded at once in the Drives schema.
  const DRIVES = 12_000;
  await h.drivesDb.knex.transaction(async (trx) => {
    await trx.raw(`SELECT set_config('mileage.organization_id', ?, true)`, [String(h.globexId)]);
    await trx.raw(
      `INSERT INTO drives (organization_id, user_id, started_at, ended_at, distance_amount, distance_units, entry,
                           classification, description)
       SELECT ?, ?, t, t + interval '25 minutes', 12.5, 'mi', 'manual',
              (ARRAY['business', 'personal', 'unclassified'])[1 + g % 3], 'visit ' || g || ': ' || repeat(?, 50)
         FROM generate_series(1, ?) g, LATERAL (SELECT timestamptz '2025-01-01' + g * interval '1 hour' AS t) s`,
      [h.globexId, GLOBEX.frank, 'a note long enough to make the copy weigh ', DRIVES],
    );
  });
  const { rows: recorded } = await h.drivesDb.knex.raw<{ rows: { id: string }[] }>(
    `SELECT id FROM drives WHERE organization_id = ? AND user_id = ? ORDER BY id`,
    [h.globexId, GLOBEX.frank],
  );
  const expected = recorded.map((r) => Number(r.id));
  assert.ok(expected.length >= DRIVES);

  // The pages the gateway asks for, and how far ahead of the reader each ask is.
  let asked = 0;
  let inFlight = 0;
  let fetchedBytes = 0;
  let largestPage = 0;
  let readBytes = 0;
  let mostAhead = 0;
  const app = h.app({
    unrecorded: true,
    observeDrives: (drives) =>
      new Proxy(drives, {
        get(target, key, receiver) {
          const value: unknown = Reflect.get(target, key, receiver);
          if (key !== 'exportUserDrives') return value;
          return async (...args: Parameters<typeof drives.exportUserDrives>) => {
            asked++;
            inFlight++;
            mostAhead = Math.max(mostAhead, fetchedBytes - readBytes);
            try {
              const page = await target.exportUserDrives(...args);
              fetchedBytes += page.drivesNdjson.length;
              largestPage = Math.max(largestPage, page.drivesNdjson.length);
              return page;
            } finally {
              inFlight--;
            }
          };
        },
      }),
  });
  const dir = mkdtempSync(path.join(tmpdir(), 'personal-copy-'));
  const socketPath = path.join(dir, 'gateway.sock');
  let served: http.ServerResponse | undefined;
  const server = http.createServer((req, res) => {
    served = res;
    app(req, res);
  });
  server.listen(socketPath);
  await once(server, 'listening');
  try {
    const token = await h.signWithRealKey({
      user_id: GLOBEX.frank,
      scope: 'users_read drives_read',
      sub: `sub-${GLOBEX.frank}`,
    });
    const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http
        .get({ socketPath, path: '/v1/users/me/export', headers: { Authorization: `Bearer ${token}` } })
        .on('response', resolve)
        .on('error', reject),
    );
    assert.equal(res.statusCode, 200);
    res.pause();
    // The reader keeps what it checks of each line, not the copy (its own memory stays flat too): the ids, and the
    // first and last drives, which change while it has stopped reading.
    const [first, last] = [expected[0]!, expected[expected.length - 1]!];
    const ids: number[] = [];
    const descriptions = new Map<number, string>();
    let rest = '';
    let lines = 0;
    const take = (chunk: Buffer) => {
      readBytes += chunk.length;
      const text = rest + chunk.toString('utf8');
      const parts = text.split('\n');
      rest = parts.pop()!;
      for (const line of parts) {
        const parsed = JSON.parse(line) as { user?: { id: string }; drive?: { drive_id: number; description: string } };
        if (lines++ === 0) assert.equal(parsed.user?.id, GLOBEX.frank, 'the profile first');
        else {
          const { drive_id: id, description } = parsed.drive!;
          ids.push(id);
          if (id === first || id === last) descriptions.set(id, description);
        }
      }
    };
    /** Reads until `enough` holds or the copy ends, a chunk at a time. */
    const readUntil = async (enough: () => boolean) => {
      while (!enough()) {
        const chunk = res.read() as Buffer | null;
        if (chunk) take(chunk);
        else if (res.readableEnded) return;
        else await readableOrEnded(res);
      }
    };
    const rssBefore = process.memoryUsage().rss;

    // The reader takes 2 MB, then stops. The gateway goes on until what it wrote fills the socket, then waits: no page
    // is on its way and bytes wait in the socket, the response waiting for a drain (or ended, had it run ahead).
    await readUntil(() => readBytes >= 2 * 1_048_576);
    const waiting = () =>
      inFlight === 0 &&
      (served!.socket?.writableLength ?? 0) > 0 &&
      (served!.writableNeedDrain || served!.writableEnded);
    await until(() => waiting() || served!.writableFinished);
    const askedWhenStopped = asked;
    const aheadWhenStopped = fetchedBytes - readBytes;
    const bound = () => kernelBufferBytes() + 2 * largestPage + 1_048_576;
    assert.ok(aheadWhenStopped <= bound(), `${aheadWhenStopped} bytes fetched and not read (at most ${bound()})`);
    assert.equal(served!.writableEnded, false, 'the gateway wrote the whole copy while the reader did not read');
    const rssStopped = process.memoryUsage().rss;

    // Meanwhile a drive the reader has and one it has not yet change, and a new drive is recorded.
    assert.ok(ids.includes(first) && !ids.includes(last));
    await h.drivesDb.knex.transaction(async (trx) => {
      await trx.raw(`SELECT set_config('mileage.organization_id', ?, true)`, [String(h.globexId)]);
      await trx.raw(
        `UPDATE drives SET description = 'changed during the copy', modified_at = now() WHERE id = ANY(?::bigint[])`,
        [[first, last]],
      );
      await trx.raw(
        `INSERT INTO drives (organization_id, user_id, started_at, ended_at, entry, classification)
         VALUES (?, ?, now(), now(), 'manual', 'business')`,
        [h.globexId, GLOBEX.frank],
      );
    });
    assert.equal(asked, askedWhenStopped, 'nothing more was asked for while the reader did not read');

    await readUntil(() => false);
    assert.equal(rest, '', 'the copy ends with a whole line');
    const rssAfter = process.memoryUsage().rss;

    // Every drive recorded when the copy began, once each, in order; none recorded after it began.
    assert.deepEqual(ids, expected);
    assert.equal(descriptions.get(last), 'changed during the copy', 'a drive changed before it was sent: as changed');
    assert.notEqual(descriptions.get(first), 'changed during the copy', 'a drive sent before it changed: as sent');
    assert.ok(readBytes >= 20 * 1_048_576, `the copy is many MB (${readBytes} bytes)`);

    // How far the gateway got ahead of the reader: the socket's buffers and the page it was writing, no more.
    assert.ok(mostAhead <= bound(), `the gateway was ${mostAhead} bytes ahead of the reader (at most ${bound()})`);
    const mb = (bytes: number) => (bytes / 1_048_576).toFixed(1);
    t.diagnostic(
      `copy ${mb(readBytes)} MB in ${asked} pages of up to ${mb(largestPage)} MB; the reader stopped after ` +
        `${mb(2 * 1_048_576)} MB: ${askedWhenStopped} pages asked, ${mb(aheadWhenStopped)} MB fetched and not read ` +
        `(most ahead at an ask: ${mb(mostAhead)} MB; bound ${mb(bound())} MB); this process's RSS ${mb(rssBefore)} MB ` +
        `before, ${mb(rssStopped)} MB while stopped, ${mb(rssAfter)} MB after`,
    );
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
