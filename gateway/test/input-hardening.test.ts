// Hostile values for the /v1 drive-list parameters through the real gateway and services: a 4xx with the contract's
// error body, never a 5xx (fast-check generates the values; the failing one is printed when a property breaks).
import fc from 'fast-check';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import type { Express } from 'express';
import { startHarness, type Harness } from './harness';

let h: Harness;
let app: Express;
let bob: string;
let alice: string;

before(async () => {
  h = await startHarness();
  // Many requests per property: the limits are raised, the rest of the chain is as in production.
  app = h.app({ rateLimitMultiplier: 100_000 });
  bob = await h.token('bob@example.com', 'drives_read groups_read_reported_drives');
  alice = await h.token('alice@example.com', 'groups_read_reported_drives');
});
after(() => h.close());

const get = (path: string, token: string) => request(app).get(path).set('Authorization', `Bearer ${token}`);
const LISTS = [
  () => ({ path: '/v1/users/BobDriver1/drives', token: bob }),
  () => ({ path: `/v1/groups/${h.groups.demo}/reported-drives`, token: alice }),
  () => ({ path: '/v1/drives', token: alice }),
];

function assertClientError(res: request.Response, value: string): void {
  assert.ok(res.status < 500, `${res.status} for ${JSON.stringify(value)}: ${JSON.stringify(res.body)}`);
  if (res.status === 422) {
    assert.ok(Array.isArray(res.body.detail), 'the 422 body is FastAPI-shaped');
    assert.equal(typeof res.body.detail[0].msg, 'string');
  }
}

describe('drive-list dates are checked for real', () => {
  for (const value of [
    '0000-01-01T00:00:00Z', // year 0: JavaScript's 1 BC, which PostgreSQL refuses
    '0001-01-01T00:00:00+01:00', // year 0 once in UTC
    '9999-12-31T23:30:00-01:00', // year 10000 once in UTC
    '2026-02-30T00:00:00Z', // no such day (was shifted to 2 March)
    '2026-01-01T24:00:00Z', // no such hour (was shifted to the next day)
    '2026-01-01T00:00:00+25:00',
  ]) {
    test(`${value} → 422 on every list`, async () => {
      for (const list of LISTS) {
        const { path, token } = list();
        const res = await get(`${path}?filter_by=modified&date_after=${encodeURIComponent(value)}`, token);
        assert.equal(res.status, 422, `${path}: ${JSON.stringify(res.body)}`);
        assert.deepEqual(res.body.detail[0].loc, ['query', 'date_after']);
        assert.equal(res.body.detail[0].type, 'datetime_parsing');
      }
    });
  }

  test('hostile values of every parameter answer 200 or 422, never 5xx (property)', async () => {
    const hostile = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.constantFrom('-1', '1e3', '0x10', '9'.repeat(40), 'NaN', '', ' ', '%', '\u0000'),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      fc
        .tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 99 }))
        .map(
          ([y, m, d]) =>
            `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}T00:00:00Z`,
        ),
    );
    const names = [
      'limit',
      'classification',
      'filter_by',
      'date_after',
      'date_before',
      'modified_after',
      'modified_before',
      'cursor',
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...LISTS), fc.constantFrom(...names), hostile, async (list, name, value) => {
        const { path, token } = list();
        const query = name.startsWith('date_') ? `filter_by=ended&${name}=` : `${name}=`;
        const res = await get(`${path}?${query}${encodeURIComponent(value)}`, token);
        assertClientError(res, value);
      }),
      { numRuns: 300 },
    );
  });
});

describe('unknown and repeated parameters (CONTRACT §2, as the reference API)', () => {
  test('an unknown parameter is ignored', async () => {
    const plain = await get('/v1/users/BobDriver1/drives?limit=3', bob).expect(200);
    const busted = await get('/v1/users/BobDriver1/drives?limit=3&_=1732350000&foo[bar]=x', bob).expect(200);
    assert.deepEqual(busted.body.results, plain.body.results);
  });

  test('the last value of a repeated parameter wins', async () => {
    const res = await get('/v1/users/BobDriver1/drives?limit=500&limit=2', bob).expect(200);
    assert.equal(res.body.results.length, 2);
    const bad = await get('/v1/users/BobDriver1/drives?limit=2&limit=0', bob).expect(422);
    assert.deepEqual(bad.body.detail[0].loc, ['query', 'limit']);
  });
});

describe('SCIM: hostile input is a SCIM error, never a 5xx', () => {
  let scim: string;
  before(async () => {
    scim = await h.scimToken();
  });
  const scimGet = (path: string) => request(app).get(`/scim/v2${path}`).set('Authorization', `Bearer ${scim}`);

  test('a malformed %-escape in the path is 404', async () => {
    const res = await scimGet('/Users/%E0%A4%A').expect(404);
    assert.deepEqual(res.body.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error']);
  });

  test('a startIndex beyond 32 bits is an empty page, not a serialisation failure', async () => {
    const res = await scimGet('/Users?startIndex=999999999999&count=5').expect(200);
    assert.deepEqual(res.body.Resources, []);
    assert.ok(res.body.totalResults > 0);
  });

  test('a lone UTF-16 surrogate in a JSON body is 400 invalidSyntax', async () => {
    const body = '{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"lone\\ud800@example.com"}';
    const res = await request(app)
      .post('/scim/v2/Users')
      .set('Authorization', `Bearer ${scim}`)
      .set('Content-Type', 'application/scim+json')
      .send(body)
      .expect(400);
    assert.equal(res.body.scimType, 'invalidSyntax');
  });

  test('meta dates PostgreSQL cannot store, or that do not exist, are 400 invalidFilter', async () => {
    for (const date of ['0000-01-01T00:00:00Z', '2026-02-30T00:00:00Z', '2026-01-01T24:00:00Z']) {
      const res = await scimGet(`/Users?filter=${encodeURIComponent(`meta.created gt "${date}"`)}`).expect(400);
      assert.equal(res.body.scimType, 'invalidFilter', date);
    }
  });

  test('hostile filters, paging and paths answer 2xx or 4xx (property)', async () => {
    const text = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.constantFrom('"', '\\', '(', '[', '%', '\u0000'),
    );
    const filter = fc.oneof(
      text,
      fc
        .tuple(
          fc.constantFrom('userName', 'meta.created', 'emails.value', 'active', 'title', 'x'),
          fc.constantFrom('eq', 'gt', 'co', 'pr', 'zz'),
          text,
        )
        .map(([a, op, v]) => `${a} ${op} ${JSON.stringify(v)}`),
    );
    const number = fc.oneof(fc.integer().map(String), fc.constantFrom('9'.repeat(30), '-0', '1e9', '', 'x'));
    await fc.assert(
      fc.asyncProperty(filter, number, number, text, async (f, startIndex, count, segment) => {
        const query = `filter=${encodeURIComponent(f)}&startIndex=${encodeURIComponent(startIndex)}&count=${encodeURIComponent(count)}`;
        const list = await scimGet(`/Users?${query}`);
        assert.ok(list.status < 500, `${list.status} for ${query}: ${JSON.stringify(list.body)}`);
        const item = await scimGet(`/Users/${encodeURIComponent(segment)}`);
        assert.ok(item.status < 500, `${item.status} for ${JSON.stringify(segment)}`);
      }),
      { numRuns: 150 },
    );
  });
});
