/**
 * No lockout by a neighbour's junk (CONTRACT §7): while one client floods `Authorization: Bearer junk…` from an
 * address (an identity provider's shared egress), every valid credential from the same address is answered — a SCIM
 * secret token, a freshly issued client-credentials token, a user's token — and only the junk is refused (401, then
 * 429 with the contract's headers once the address is over its invalid-token limit).
 */
import type { Express } from 'express';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { GLOBEX, startHarness, type Harness } from './harness';

let h: Harness;
/** A replica whose verifier limits invalid tokens as the chart's default does, but refilled at 1 a minute. */
let app: Express;
const BURST = 20;

before(async () => {
  h = await startHarness();
  app = h.app({ invalidTokenLimit: { burst: BURST, perMinute: 1 } });
});
after(() => h.close());

const junk = (i: number) =>
  request(app)
    .get(i % 2 ? '/scim/v2/Users' : '/v1/users/me')
    .set('Authorization', `Bearer junk${i}.${'x'.repeat(i % 7)}`);

test('junk from one address: refused (401, then 429), while every valid credential from it is answered', async () => {
  const flood = await Promise.all(Array.from({ length: BURST + 30 }, (_, i) => junk(i)));
  const counts = (statuses: number[]) =>
    statuses.reduce<Record<number, number>>((c, s) => ({ ...c, [s]: (c[s] ?? 0) + 1 }), {});
  assert.deepEqual(counts(flood.map((r) => r.status)), { 401: BURST, 429: 30 });
  const limited = flood.find((r) => r.status === 429)!;
  assert.ok(Number(limited.headers['retry-after']) > 0);
  assert.equal(limited.headers['x-ratelimit-limit'], '1');
  assert.equal(limited.headers['x-ratelimit-remaining'], '0');
  assert.ok(Number(limited.headers['x-ratelimit-reset']) > Date.now() / 1000);

  // Each valid credential is used for the first time now, with more junk in flight beside it.
  const erin = await h.signWithRealKey({ user_id: GLOBEX.erin, scope: 'organization_manage', sub: 'sub-erin' });
  const minted = request(app).post('/v1/organization/scim-tokens').set('Authorization', `Bearer ${erin}`).send({
    name: 'minted from a flooded address',
  });
  const [mint, ...moreJunk] = await Promise.all([minted, ...Array.from({ length: 10 }, (_, i) => junk(i))]);
  assert.equal(mint.status, 201, JSON.stringify(mint.body));
  const secret = (mint.body as { token: string }).token;
  const clientToken = await h.scimToken();
  const userToken = await h.token('alice@example.com', 'users_read');
  const valid = [
    request(app).get('/scim/v2/Users?count=1').set('Authorization', `Bearer ${secret}`),
    request(app).get('/scim/v2/Users?count=1').set('Authorization', `Bearer ${clientToken}`),
    request(app).get('/v1/users/me').set('Authorization', `Bearer ${userToken}`),
  ];
  const answers = await Promise.all([...valid, ...Array.from({ length: 20 }, (_, i) => junk(i))]);
  assert.deepEqual(
    answers.slice(0, 3).map((r) => r.status),
    [200, 200, 200],
    'the secret token, the fresh client token, the user token',
  );
  assert.ok(
    [...moreJunk, ...answers.slice(3)].every((r) => r.status === 429),
    'the junk beside them is still refused',
  );
  // And again, now cached: still answered.
  for (const r of await Promise.all([
    request(app).get('/scim/v2/Users?count=1').set('Authorization', `Bearer ${secret}`),
    request(app).get('/v1/users/me').set('Authorization', `Bearer ${userToken}`),
  ]))
    assert.equal(r.status, 200);
});

test('an unknown but well-formed SCIM secret from the flooded address is refused, never taken', async () => {
  const unknown = `mscim_${'Q'.repeat(43)}`;
  const res = await request(app).get('/scim/v2/Users').set('Authorization', `Bearer ${unknown}`);
  assert.equal(res.status, 429);
  assert.equal(res.headers['content-type'], 'application/scim+json; charset=utf-8');
});
