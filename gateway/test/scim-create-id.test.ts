/**
 * CONTRACT §7: no answer reveals whether an id exists in another organization, a POST /Users that sends an `id`
 * included. The sent id is ignored (RFC 7644 §3.3, `id` is readOnly), so Globex creating a user "with" Demo Org's id
 * gets exactly the answer it gets with an id that exists nowhere: 201, the same headers, the same body shape, a fresh
 * server-issued id; and Demo Org's user stays untouched.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { GLOBEX, SCIM_URN, startHarness, type Harness } from './harness';

let h: Harness;
let app: Express;
let globexToken = '';

before(async () => {
  h = await startHarness();
  app = h.app({ rateLimitMultiplier: 100 });
  globexToken = await h.signWithRealKey({
    azp: 'mileage-scim-globex',
    scope: 'scim',
    sub: 'service-account-globex',
    org_id: GLOBEX.alias,
  });
});
after(() => h.close());

const unique = () => Math.random().toString(36).slice(2, 10);

function create(token: string, body: Record<string, unknown>) {
  return request(app)
    .post('/scim/v2/Users')
    .set('Authorization', `Bearer ${token}`)
    .set('Content-Type', 'application/scim+json')
    .send(JSON.stringify({ schemas: [SCIM_URN.CORE_USER], ...body }));
}

/** An answer with what differs between any two creates (the issued id, the userName, times, rate counters) masked. */
function shape(res: request.Response): string {
  const { id, userName } = res.body as { id: string; userName: string };
  const masked = (text: string) =>
    text
      .replaceAll(id, '<id>')
      .replaceAll(userName, '<userName>')
      .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<time>');
  const headers = Object.entries(res.headers)
    .filter(([name]) => !['date', 'x-request-id', 'traceparent', 'content-length'].includes(name))
    // The rate limit's counters move with every request: their presence is compared, not their numbers.
    .map(
      ([name, value]) =>
        `${name}: ${name.includes('ratelimit') ? String(value).replace(/\d+/g, 'n') : masked(String(value))}`,
    )
    .sort();
  return `${res.status}\n${headers.join('\n')}\n${masked(res.text)}`;
}

describe('POST /Users with an id: nothing of another organization shows', () => {
  test("Demo Org's id and an id that exists nowhere get the same answer from Globex; neither is honoured", async () => {
    const demoIds = ['AliceAdm01', 'BobDriver1'];
    const nowhere = ['Zq9Unused1', 'Zq9Unused2'];
    const answers = new Map<string, request.Response>();
    for (const id of [...demoIds, ...nowhere]) {
      const res = await create(globexToken, { id, userName: `probe.${unique()}@globex.example`, displayName: 'Probe' });
      assert.equal(res.status, 201, res.text);
      assert.notEqual(res.body.id, id, 'a sent id is never kept');
      assert.match(res.body.id, /^[A-Za-z0-9]{10}$/);
      assert.ok(!res.text.includes(id), `the answer does not echo the sent id ${id}`);
      answers.set(id, res);
    }
    const reference = shape(answers.get(nowhere[0]!)!);
    for (const [id, res] of answers) assert.equal(shape(res), reference, `the answer for ${id}`);

    // Demo Org's user is untouched and Globex still cannot see it.
    const demo = await request(app)
      .get('/scim/v2/Users/AliceAdm01')
      .set('Authorization', `Bearer ${await h.scimToken()}`)
      .expect(200);
    assert.equal(demo.body.userName, 'alice@example.com');
    await request(app).get('/scim/v2/Users/AliceAdm01').set('Authorization', `Bearer ${globexToken}`).expect(404);
  });

  test("one's own taken id is ignored too: a fresh id, so a 409 can only ever be about one's own userName", async () => {
    const userName = `own.${unique()}@globex.example`;
    const res = await create(globexToken, { id: GLOBEX.erin, userName });
    assert.equal(res.status, 201, res.text);
    assert.notEqual(res.body.id, GLOBEX.erin);
    const again = await create(globexToken, { id: 'Zq9Unused3', userName });
    assert.equal(again.status, 409);
    assert.equal(again.body.scimType, 'uniqueness');
  });
});
