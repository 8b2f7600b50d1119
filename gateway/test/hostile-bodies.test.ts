// Every JSON body a client can send to a route that takes one, through the real gateway and services: a 4xx with the
// route's error shape, never a 5xx and never an internal detail (fast-check generates the bodies; the failing one is
// printed when the property breaks).
import fc from 'fast-check';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import type { Express } from 'express';
import { startHarness, type Harness } from './harness';

let h: Harness;
let app: Express;
let scim: string;
let alice: string;

before(async () => {
  h = await startHarness();
  app = h.app({ rateLimitMultiplier: 100_000 });
  scim = await h.scimToken();
  alice = await h.token('alice@example.com', 'webhooks_manage');
});
after(() => h.close());

/** A request of `route` as its caller. */
const send = (route: (typeof ROUTES)[number], contentType: string, body: string) => {
  const agent = request(app);
  return agent[route.method](route.path())
    .set('Authorization', `Bearer ${route.token()}`)
    .set('Content-Type', contentType)
    .send(body);
};

/** Any JSON value, with the keys and values the routes look at mixed in so that bodies get past the first checks. */
const json: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 4 }),
    fc.constantFrom(
      'add',
      'Replace',
      'remove',
      'members[value eq "AliceAdm01"]',
      'emails[type eq "work"].value',
      'name.givenName',
      'True',
      1e308,
      -0,
      2 ** 63,
      '',
    ),
    fc.dictionary(
      fc.constantFrom(
        'schemas',
        'userName',
        'name',
        'emails',
        'active',
        'Operations',
        'op',
        'path',
        'value',
        'members',
        'displayName',
        'externalId',
        'filter',
        'startIndex',
        'count',
        'url',
        'events',
        'expires_at',
        'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
        '__proto__',
        'constructor',
        'toString',
        'hasOwnProperty',
      ),
      tie('value'),
      { maxKeys: 6 },
    ),
    fc.array(tie('value'), { maxLength: 4 }),
  ),
})).value;

const ROUTES: { method: 'post' | 'put' | 'patch'; path: () => string; token: () => string; scimRoute: boolean }[] = [
  { method: 'post', path: () => '/scim/v2/Users', token: () => scim, scimRoute: true },
  { method: 'put', path: () => '/scim/v2/Users/AliceAdm01', token: () => scim, scimRoute: true },
  { method: 'patch', path: () => '/scim/v2/Users/AliceAdm01', token: () => scim, scimRoute: true },
  { method: 'patch', path: () => `/scim/v2/Groups/${h.groups.demo}`, token: () => scim, scimRoute: true },
  { method: 'put', path: () => `/scim/v2/Groups/${h.groups.demo}`, token: () => scim, scimRoute: true },
  { method: 'post', path: () => '/scim/v2/Users/.search', token: () => scim, scimRoute: true },
  { method: 'post', path: () => '/scim/v2/Groups/.search', token: () => scim, scimRoute: true },
  { method: 'post', path: () => `/v1/groups/${h.groups.demo}/webhooks`, token: () => alice, scimRoute: false },
];

/** Bodies no generator above writes: numbers past a double, nesting past any recursion, odd encodings. */
const RAW = [
  '{"userName": 1e999}',
  '{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "x", "emails": [{"value": 1e999}]}',
  `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
  `{"Operations": ${'['.repeat(5_000)}${']'.repeat(5_000)}}`,
  '{"userName": "\\ud800"}',
  '\ufeff{"userName": "bom@example.com"}',
  '{"a": 1, "a": 2}',
];

describe('hostile JSON bodies', () => {
  test("bodies past the parser's usual cases get a 4xx on every route", async () => {
    for (const route of ROUTES)
      for (const body of RAW) {
        const res = await send(route, 'application/json', body);
        assert.ok(
          res.status < 500,
          `${route.method} ${route.path()} ${res.status} for ${body.slice(0, 80)}: ${res.text}`,
        );
      }
  });

  test('every body on every route that takes one gets a 4xx, never a 5xx or an internal', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), json, async (route, body) => {
        const contentType = route.scimRoute ? 'application/scim+json' : 'application/json';
        const res = await send(route, contentType, JSON.stringify(body));
        const text = JSON.stringify(res.body);
        assert.ok(
          res.status < 500,
          `${route.method} ${route.path()} ${res.status} for ${JSON.stringify(body)}: ${text}`,
        );
        assert.doesNotMatch(text, /at .*\.js|SELECT|INSERT|grpc|TypeError|undefined/i);
      }),
      { numRuns: 400 },
    );
  });
});
