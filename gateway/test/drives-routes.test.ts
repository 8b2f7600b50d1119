import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { startHarness, type Harness } from './harness';

let h: Harness;
let bob: string;
let alice: string;

before(async () => {
  h = await startHarness();
  bob = await h.token('bob@example.com', 'drives_read groups_read_reported_drives');
  alice = await h.token('alice@example.com', 'drives_read groups_read_reported_drives');
});
after(() => h.close());

const get = (path: string, token: string) => request(h.app()).get(path).set('Authorization', `Bearer ${token}`);

async function pageThrough(path: string, token: string, key: 'drive_id' | 'id'): Promise<(number | string)[]> {
  const app = h.app();
  const seen: (number | string)[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 50; i++) {
    const url: string = cursor ? `${path}${path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(cursor)}` : path;
    const res = await request(app).get(url).set('Authorization', `Bearer ${token}`).expect(200);
    seen.push(...res.body.results.map((r: Record<string, number | string>) => r[key]));
    assert.equal(res.body.has_more, res.body.next_cursor !== null);
    if (!res.body.has_more) return seen;
    cursor = res.body.next_cursor;
  }
  assert.fail('too many pages');
}

describe('GET /v1/users/{user_id}/drives', () => {
  test('business drives by default, newest first, in the DriveSchema shape', async () => {
    const res = await get('/v1/users/BobDriver1/drives', bob).expect(200);
    assert.equal(res.headers['x-ratelimit-limit'], '20');
    assert.deepEqual(
      res.body.results.map((d: { drive_id: number }) => d.drive_id),
      h.drives.bobBusiness,
    );
    assert.equal(res.body.has_more, false);
    assert.equal(res.body.next_cursor, null);
    const d = res.body.results[0];
    assert.deepEqual(Object.keys(d).sort(), [
      'classification',
      'created',
      'description',
      'distance',
      'drive_id',
      'end',
      'ended_at',
      'entry',
      'modified',
      'parking_fees',
      'purpose',
      'start',
      'started_at',
      'toll_fees',
      'value',
    ]);
    assert.equal(typeof d.drive_id, 'number');
    assert.deepEqual(d.distance, { amount: 21, units: 'mi', discounted: null });
    assert.deepEqual(d.value, { amount: 711, currency: 'USD' });
    assert.equal(d.toll_fees, null);
    assert.equal(d.entry, 'automatic');
    assert.equal(d.classification, 'business');
    assert.deepEqual(d.start.address, {
      country: 'US',
      state: 'IL',
      city: 'Chicago',
      street: '1 Main St',
      postal_code: '60601',
    });
    assert.equal(d.end, null);
    assert.match(d.started_at, /^2026-10-11T08:00:00(\.000)?Z$/);
  });

  test('classification personal and all', async () => {
    assert.deepEqual(
      (await get('/v1/users/BobDriver1/drives?classification=personal', bob).expect(200)).body.results.map(
        (d: { drive_id: number }) => d.drive_id,
      ),
      h.drives.bobPersonal,
    );
    assert.equal(
      (await get('/v1/users/BobDriver1/drives?classification=all', bob).expect(200)).body.results.length,
      12,
    );
  });

  test('cursor paging returns every drive once, in order', async () => {
    assert.deepEqual(await pageThrough('/v1/users/BobDriver1/drives?limit=4', bob, 'drive_id'), h.drives.bobBusiness);
  });

  test('filter_by=ended with exclusive bounds, and the deprecated modified_after alias', async () => {
    const res = await get(
      '/v1/users/BobDriver1/drives?filter_by=ended&date_after=2026-10-02T08:40:00Z&date_before=2026-10-06T08:40:00%2B00:00',
      bob,
    ).expect(200);
    assert.deepEqual(
      res.body.results.map((d: { ended_at: string }) => d.ended_at.slice(0, 10)),
      ['2026-10-05', '2026-10-03'],
    );
    const all = (await get('/v1/users/BobDriver1/drives', bob).expect(200)).body.results;
    const alias = await get(
      `/v1/users/BobDriver1/drives?modified_after=${encodeURIComponent(all[3].modified)}`,
      bob,
    ).expect(200);
    assert.deepEqual(
      alias.body.results.map((d: { drive_id: number }) => d.drive_id),
      h.drives.bobBusiness.slice(0, 3),
    );
  });

  test('malformed parameters are 422, each named', async () => {
    const cases: [string, string][] = [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=ten', 'limit'],
      ['classification=work', 'classification'],
      ['filter_by=created', 'filter_by'],
      ['date_after=2026-10-01T00:00:00Z', 'filter_by'],
      ['filter_by=ended&date_after=2026-10-01', 'date_after'],
      ['filter_by=ended&date_before=yesterday', 'date_before'],
      ['filter_by=ended&modified_after=2026-10-01T00:00:00Z', 'modified_after'],
      ['filter_by=ended&date_after=2026-02-30T00:00:00Z', 'date_after'],
      ['limit=1&limit=0', 'limit'],
      ['cursor=forged.cursor', 'cursor'],
    ];
    for (const [query, field] of cases) {
      const res = await get(`/v1/users/BobDriver1/drives?${query}`, bob).expect(422);
      assert.ok(
        res.body.detail.some((i: { loc: string[] }) => i.loc[0] === 'query' && i.loc[1] === field),
        `${query} → ${JSON.stringify(res.body.detail)}`,
      );
    }
    const both = await get('/v1/users/nope/drives?limit=0', bob).expect(422);
    assert.deepEqual(both.body.detail.map((i: { loc: string[] }) => i.loc.join('.')).sort(), [
      'path.user_id',
      'query.limit',
    ]);
  });

  test('a cursor only continues the query it came from', async () => {
    const first = await get('/v1/users/BobDriver1/drives?limit=2', bob).expect(200);
    const cursor = encodeURIComponent(first.body.next_cursor);
    await get(`/v1/users/BobDriver1/drives?limit=2&cursor=${cursor}`, bob).expect(200);
    await get(`/v1/users/BobDriver1/drives?limit=2&classification=all&cursor=${cursor}`, bob).expect(422);
    const [body, signature] = String(first.body.next_cursor).split('.');
    const tampered = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString()), i: 1 }),
    ).toString('base64url');
    await get(`/v1/users/BobDriver1/drives?cursor=${tampered}.${signature}`, bob).expect(422);
  });

  test('a cursor survives a rotation of CURSOR_SECRET while the old key is the previous one, and only then', async () => {
    const keyA = 'rotation-test-cursor-key-a-0123456789abc';
    const keyB = 'rotation-test-cursor-key-b-0123456789abc';
    const page = (app: ReturnType<Harness['app']>, cursor?: string) =>
      request(app)
        .get(`/v1/users/BobDriver1/drives?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
        .set('Authorization', `Bearer ${bob}`);
    const before = (await page(h.app({ cursorSecret: keyA })).expect(200)).body;
    const second = (await page(h.app({ cursorSecret: keyA }), before.next_cursor).expect(200)).body;
    const rotated = h.app({ cursorSecret: keyB, cursorSecretPrevious: keyA });
    const continued = (await page(rotated, before.next_cursor).expect(200)).body;
    assert.deepEqual(continued.results, second.results);
    assert.notEqual(continued.next_cursor, second.next_cursor, 'the next cursor is signed with the new key');
    // Without the previous key the old cursor is what any invalid cursor is (CONTRACT: 422 on query.cursor).
    const refused = await page(h.app({ cursorSecret: keyB }), before.next_cursor).expect(422);
    assert.deepEqual(
      refused.body.detail.map((i: { loc: string[] }) => i.loc.join('.')),
      ['query.cursor'],
    );
    // A cursor the rotated gateway issues is signed with the new key: a replica that holds only B continues it.
    const issuedAfter = (await page(rotated).expect(200)).body.next_cursor;
    await page(h.app({ cursorSecret: keyB }), issuedAfter).expect(200);
    await page(h.app({ cursorSecret: keyA }), issuedAfter).expect(422);
  });

  test('only the caller may read their drives; validation comes first', async () => {
    await get('/v1/users/BobDriver1/drives', alice).expect(403);
    await get('/v1/users/BobDriver1/drives?limit=0', alice).expect(422);
    const noScope = await h.token('bob@example.com', 'users_read');
    await get('/v1/users/BobDriver1/drives', noScope).expect(403);
  });
});

describe('reported drives', () => {
  test('a group admin reads the group’s reported drives, most recently modified first', async () => {
    const res = await get(`/v1/groups/${h.groups.demo}/reported-drives`, alice).expect(200);
    assert.equal(res.headers['x-ratelimit-limit'], '60');
    const ids = res.body.results.map((r: { id: string }) => r.id);
    assert.equal(ids[0], String(h.drives.reportedDemo[0]), 'the reviewed report is the most recently modified');
    assert.deepEqual([...ids].sort(), h.drives.reportedDemo.map(String).sort());
    const reviewed = res.body.results[0];
    assert.deepEqual(Object.keys(reviewed).sort(), [
      'created',
      'details',
      'driver',
      'id',
      'modified',
      'review_comments',
      'status',
    ]);
    assert.equal(reviewed.status, 'approved');
    assert.ok(reviewed.modified > reviewed.created);
    assert.deepEqual(reviewed.driver, {
      id: 'BobDriver1',
      name: 'Bob Driver',
      email: 'bob@example.com',
      status: 'active',
      timezone_offset: 0,
    });
    assert.equal(reviewed.review_comments[0].text, 'Approved for October');
    assert.equal(reviewed.review_comments[0].user_email, 'alice@example.com');
    assert.equal(typeof reviewed.review_comments[0].id, 'string');
    assert.equal(reviewed.details.classification, 'business');
    assert.equal('drive_id' in reviewed.details, false);
    const ivans = res.body.results.find((r: { driver: { id: string } }) => r.driver.id === 'Inactive01');
    assert.equal(ivans.driver.status, 'inactive');
    assert.equal(ivans.modified, ivans.created);
  });

  test('pages of reported drives, and the rules: admins only, unknown 403, bad id 422, no classification', async () => {
    const paged = await pageThrough(`/v1/groups/${h.groups.demo}/reported-drives?limit=2`, alice, 'id');
    assert.equal(paged.length, 6);
    assert.equal(new Set(paged).size, 6);
    await get(`/v1/groups/${h.groups.demo}/reported-drives`, bob).expect(403);
    await get(`/v1/groups/${h.groups.other}/reported-drives`, alice).expect(403);
    await get('/v1/groups/987654/reported-drives', alice).expect(403);
    await get('/v1/groups/x/reported-drives', alice).expect(422);
    // Not a parameter of this list: ignored, as every unknown parameter is (CONTRACT §2).
    await get(`/v1/groups/${h.groups.demo}/reported-drives?classification=all`, alice).expect(200);
  });

  test('/v1/drives (deprecated) covers every group the caller administers', async () => {
    const res = await get('/v1/drives', alice).expect(200);
    assert.equal(res.headers.deprecation, '@1795305600', 'RFC 9745: a structured-field date');
    assert.equal(res.headers.link, '</docs>; rel="deprecation"; type="text/html"');
    assert.equal(res.body.results.length, 6);
    const bobs = await get('/v1/drives', bob).expect(200);
    assert.deepEqual(
      bobs.body.results.map((r: { id: string }) => r.id),
      h.drives.reportedOther.map(String),
    );
    const noScope = await h.token('alice@example.com', 'groups_read');
    const refused = await get('/v1/drives', noScope).expect(403);
    assert.match(refused.headers['www-authenticate']!, /scope="groups_read_reported_drives"/);
  });
});
