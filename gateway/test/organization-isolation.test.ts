/**
 * CONTRACT §7 as a property: whatever one organization's credential asks — another organization's ids, userNames,
 * externalIds and group ids, in paths, in filters of every shape (eq, co, sw, pr, and, or, not), in .search bodies,
 * past the end — no id of the other organization appears in the answer, and its ids are answered exactly as ids that
 * do not exist.
 */
import fc from 'fast-check';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { GLOBEX, startHarness, type Harness } from './harness';

let h: Harness;
let app: Express;

interface Side {
  name: string;
  token: string;
  userIds: string[];
  userNames: string[];
  groupIds: string[];
}
let sides: [Side, Side];

async function side(name: string, token: string): Promise<Side> {
  const list = async (endpoint: string) =>
    (await request(app).get(`/scim/v2/${endpoint}?count=1000`).set('Authorization', `Bearer ${token}`).expect(200)).body
      .Resources as { id: string; userName?: string }[];
  const users = await list('Users');
  return {
    name,
    token,
    userIds: users.map((u) => u.id),
    userNames: users.map((u) => u.userName!),
    groupIds: (await list('Groups')).map((g) => g.id),
  };
}

before(async () => {
  h = await startHarness();
  app = h.app({ rateLimitMultiplier: 100 });
  const globexToken = await h.signWithRealKey({
    azp: 'mileage-scim-globex',
    scope: 'scim',
    sub: 'service-account-globex',
    org_id: GLOBEX.alias,
  });
  sides = [await side('demo', await h.scimToken()), await side('globex', globexToken)];
  assert.ok(sides[1].userIds.includes(GLOBEX.bob) && sides[0].userIds.includes('BobDriver1'));
});
after(() => h.close());

const scimGet = (s: Side, path: string) =>
  request(app).get(`/scim/v2${path}`).set('Authorization', `Bearer ${s.token}`);
const scimSearch = (s: Side, path: string, body: object) =>
  request(app)
    .post(`/scim/v2${path}`)
    .set('Authorization', `Bearer ${s.token}`)
    .set('Content-Type', 'application/scim+json')
    .send(body);

/** No id of `other` (that `own` does not share) anywhere in the answer, headers included. */
function assertNothingOf(other: Side, own: Side, res: request.Response, what: string) {
  const text = `${JSON.stringify(res.headers)} ${res.text}`;
  for (const id of other.userIds.filter((i) => !own.userIds.includes(i)))
    assert.ok(!text.includes(id), `${what}: ${other.name}'s user ${id} leaked to ${own.name}`);
}

const pair = fc.constantFrom<[number, number]>([0, 1], [1, 0]);
const unknownUserId = fc.stringMatching(/^[A-Za-z0-9]{10}$/);

describe('no organization sees another', () => {
  test("another organization's user or group id is answered as an unknown id", async () => {
    await fc.assert(
      fc.asyncProperty(pair, fc.nat(), unknownUserId, async ([o, t], pick, unknown) => {
        const [own, other] = [sides[o]!, sides[t]!];
        const foreignUser = other.userIds[pick % other.userIds.length]!;
        if (own.userIds.includes(foreignUser) || own.userIds.includes(unknown)) return;
        const a = await scimGet(own, `/Users/${foreignUser}`);
        const b = await scimGet(own, `/Users/${unknown}`);
        assert.equal(a.status, 404);
        assert.deepEqual([a.status, a.body], [b.status, b.body]);
        const foreignGroup = other.groupIds[pick % other.groupIds.length]!;
        const g = await scimGet(own, `/Groups/${foreignGroup}`);
        const u = await scimGet(own, '/Groups/987654321');
        assert.deepEqual([g.status, g.body], [u.status, u.body]);
      }),
      { numRuns: 30 },
    );
  });

  const value = (s: Side) =>
    fc.oneof(
      fc.constantFrom(...s.userIds, ...s.userNames),
      fc.constantFrom('bob', 'example.com', 'globex', 'Driver', 'a'),
    );
  const leaf = (s: Side) =>
    fc.oneof(
      fc
        .tuple(
          fc.constantFrom('id', 'userName', 'externalId', 'emails.value', 'displayName', 'name.givenName'),
          fc.constantFrom('eq', 'co', 'sw', 'ne'),
          value(s),
        )
        .map(([attr, op, v]) => `${attr} ${op} ${JSON.stringify(v)}`),
      fc.constantFrom('userName pr', 'externalId pr', 'emails pr'),
    );
  const filter = (s: Side) =>
    fc.letrec<{ expr: string }>((tie) => ({
      expr: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf(s),
        fc.tuple(tie('expr'), fc.constantFrom('and', 'or'), tie('expr')).map(([a, op, b]) => `(${a}) ${op} (${b})`),
        tie('expr').map((e) => `not (${e})`),
      ),
    })).expr;

  test("filters of every shape built from another organization's values never match it", async () => {
    await fc.assert(
      fc.asyncProperty(
        pair.chain(([o, t]) => fc.tuple(fc.constant([o, t] as const), filter(sides[t]!), fc.nat({ max: 20 }))),
        async ([[o, t], expr, start]) => {
          const [own, other] = [sides[o]!, sides[t]!];
          const query = `?filter=${encodeURIComponent(expr)}&startIndex=${start + 1}`;
          for (const res of [
            await scimGet(own, `/Users${query}`),
            await scimSearch(own, '/Users/.search', { filter: expr, startIndex: start + 1 }),
            await scimSearch(own, '/.search', { filter: expr }),
          ]) {
            if (res.status === 400) continue; // a filter the grammar refuses (e.g. "emails pr" on groups): no leak
            assert.equal(res.status, 200, `${expr}: ${res.text}`);
            assertNothingOf(other, own, res, expr);
            assert.ok(res.body.totalResults <= own.userIds.length + own.groupIds.length, `${expr}: totalResults`);
            for (const r of res.body.Resources as { id: string }[])
              assert.ok(own.userIds.includes(r.id) || own.groupIds.includes(r.id), `${expr}: ${r.id}`);
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  test("/v1: another organization's group is the same 403 as a group that does not exist", async () => {
    const people = [
      await h.signWithRealKey({ user_id: 'AliceAdm01', scope: 'groups_read', sub: 'sub-alice-isolation' }),
      await h.signWithRealKey({ user_id: GLOBEX.erin, scope: 'groups_read', sub: 'sub-erin-isolation' }),
    ];
    await fc.assert(
      fc.asyncProperty(pair, fc.nat(), async ([o, t], pick) => {
        const token = people[o]!;
        const foreign = sides[t]!.groupIds[pick % sides[t]!.groupIds.length]!;
        const a = await request(app).get(`/v1/groups/${foreign}`).set('Authorization', `Bearer ${token}`);
        const b = await request(app).get('/v1/groups/987654321').set('Authorization', `Bearer ${token}`);
        assert.equal(a.status, 403);
        assert.deepEqual([a.status, a.body], [b.status, b.body]);
        const own = await request(app).get('/v1/groups').set('Authorization', `Bearer ${token}`).expect(200);
        assertNothingOf(sides[t]!, sides[o]!, own, '/v1/groups');
      }),
      { numRuns: 10 },
    );
  });
});
