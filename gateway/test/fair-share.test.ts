/**
 * Fair share through the whole gateway (CONTRACT §7): while another organization is active, an organization holding its
 * share of the replica gets 429 with Retry-After — as a SCIM Error on /scim/v2, as a problem on /v1 — while the other
 * organization's requests are served;
 * a costly request (a large page, a list with unindexed filter terms) is refused where a point read still fits, and
 * every request gives its units back when answered.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { Metrics } from '@mileage/runtime/telemetry';
import { ACTIVE_WINDOW_MS, OrganizationShares } from '@mileage/gateway';
import { DEMO_ORGANIZATION, GLOBEX, startHarness, type Harness } from './harness';

let h: Harness;
let app: Express;
let shares: OrganizationShares;
let clockMs = 1_000_000;
const metrics = new Metrics('gateway');

before(async () => {
  h = await startHarness();
  // 40 units an organization in flight, 250 a second; on a clock the tests move.
  shares = new OrganizationShares({
    capacity: 160,
    unitsPerSecond: 1_000,
    organizationShare: 0.25,
    metrics,
    now: () => clockMs,
  });
  app = h.app({ shares, metrics, rateLimitMultiplier: 1_000 });
});
after(() => h.close());
// Each test a second later than the one before: the buckets of a second's spending are full again.
beforeEach(() => void (clockMs += 1_000));

const globexScim = () =>
  h.signWithRealKey({ azp: 'mileage-scim-globex', scope: 'scim', sub: 'sa-globex', org_id: GLOBEX.alias });
const demoScim = () => h.signWithRealKey({ azp: 'mileage-scim', scope: 'scim', sub: 'sa-demo' });
const scim = (token: string, path: string) =>
  request(app).get(`/scim/v2${path}`).set('Authorization', `Bearer ${token}`);
const v1 = (token: string, path: string) => request(app).get(path).set('Authorization', `Bearer ${token}`);

/**
 * Holds `units` of the organization's share, as its requests in flight would, for the length of `work`, while the other
 * organization holds one unit (it is active: the shares apply).
 */
async function holding<T>(organizationId: number, units: number, work: () => Promise<T>): Promise<T> {
  const other = organizationId === DEMO_ORGANIZATION ? h.globexId : DEMO_ORGANIZATION;
  const releases = [shares.admit(other, 1), ...Array.from({ length: units }, () => shares.admit(organizationId, 1))];
  try {
    return await work();
  } finally {
    releases.forEach((release) => release());
  }
}

describe('fair share of a replica', () => {
  test('an organization at its share gets 429 with Retry-After on SCIM; another organization is served', async () => {
    const [globex, demo] = await Promise.all([globexScim(), demoScim()]);
    await holding(h.globexId, shares.perOrganization, async () => {
      const refused = await scim(globex, `/Users/${GLOBEX.frank}`);
      assert.equal(refused.status, 429);
      assert.equal(refused.headers['retry-after'], '1');
      assert.match(refused.headers['content-type'] ?? '', /application\/scim\+json/);
      assert.equal(refused.body.status, '429');
      assert.deepEqual(refused.body.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error']);
      // The per-minute headers of the organization's rate limit still come with it.
      assert.ok(refused.headers['x-ratelimit-limit']);
      const served = await scim(demo, '/Users?filter=userName%20eq%20%22alice%40example.com%22');
      assert.equal(served.status, 200);
      assert.equal(served.body.totalResults, 1);
    });
    assert.equal((await scim(globex, `/Users/${GLOBEX.frank}`)).status, 200);
    assert.equal(shares.holding(h.globexId), 0, 'every answered request gave its units back');
  });

  test('a list with unindexed filter terms is refused where a point read still fits', async () => {
    const globex = await globexScim();
    // 20 of 40 held: a list of 100 (15) with three scans of the addresses (12) does not fit; a list of 10 (4) and a
    // point read (1) do.
    await holding(h.globexId, 20, async () => {
      const filter = encodeURIComponent('emails.value co "a" or emails.value co "b" or emails.value co "c"');
      assert.equal((await scim(globex, `/Users?filter=${filter}`)).status, 429);
      assert.equal((await scim(globex, '/Users?count=10')).status, 200);
      assert.equal((await scim(globex, `/Users/${GLOBEX.bob}`)).status, 200);
    });
  });

  test('/v1: a page of 1,000 drives is refused where a small page fits, as a problem with Retry-After', async () => {
    const alice = await h.token('alice@example.com', 'drives_read users_read');
    const bobToken = await h.token('bob@example.com', 'drives_read users_read');
    // 4 of 40 held: a page of 1,000 costs 68, counted as the whole share.
    await holding(DEMO_ORGANIZATION, 4, async () => {
      const big = await v1(bobToken, '/v1/users/BobDriver1/drives?limit=1000');
      assert.equal(big.status, 429);
      assert.equal(big.headers['retry-after'], '1');
      assert.match(big.body.detail, /at once/);
      assert.equal((await v1(bobToken, '/v1/users/BobDriver1/drives?limit=10')).status, 200);
      assert.equal((await v1(alice, '/v1/users/me')).status, 200);
    });
    assert.equal(shares.holding(DEMO_ORGANIZATION), 0);
  });

  test('an organization alone on the replica is bounded by no share', async () => {
    const globex = await globexScim();
    // A second on, Demo Org's requests of the tests before no longer count: Globex is alone.
    clockMs += ACTIVE_WINDOW_MS;
    const releases = Array.from({ length: shares.perOrganization }, () => shares.admit(h.globexId, 1));
    try {
      assert.equal((await scim(globex, `/Users/${GLOBEX.frank}`)).status, 200);
      assert.equal((await scim(globex, '/Users')).status, 200);
    } finally {
      releases.forEach((release) => release());
    }
  });

  test('the refusals are counted per organization and reason', async () => {
    const text = await metrics.registry.metrics();
    assert.match(
      text,
      new RegExp(`gateway_organization_share_refusals_total\\{[^}]*organization="${h.globexId}",reason="in_flight"`),
    );
  });
});
