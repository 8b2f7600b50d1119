/**
 * Fair share through the whole gateway (CONTRACT §7): an organization holding its share of the replica gets 429 with
 * Retry-After — as a SCIM Error on /scim/v2, as a problem on /v1 — while another organization's requests are served;
 * a costly request (a large page, a list with unindexed filter terms) is refused where a point read still fits, and
 * every request gives its units back when answered.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { Metrics } from '@mileage/runtime';
import { OrganizationShares } from '@mileage/gateway';
import { DEMO_ORGANIZATION, GLOBEX, startHarness, type Harness } from './harness';

let h: Harness;
let app: Express;
let shares: OrganizationShares;
const metrics = new Metrics('gateway');

before(async () => {
  h = await startHarness();
  // 8 units an organization.
  shares = new OrganizationShares({ capacity: 32, organizationShare: 0.25, metrics });
  app = h.app({ shares, metrics, rateLimitMultiplier: 1_000 });
});
after(() => h.close());

const globexScim = () =>
  h.signWithRealKey({ azp: 'mileage-scim-globex', scope: 'scim', sub: 'sa-globex', org_id: GLOBEX.alias });
const demoScim = () => h.signWithRealKey({ azp: 'mileage-scim', scope: 'scim', sub: 'sa-demo' });
const scim = (token: string, path: string) =>
  request(app).get(`/scim/v2${path}`).set('Authorization', `Bearer ${token}`);
const v1 = (token: string, path: string) => request(app).get(path).set('Authorization', `Bearer ${token}`);

/** Holds `units` of the organization's share, as its requests in flight would, for the length of `work`. */
async function holding<T>(organizationId: number, units: number, work: () => Promise<T>): Promise<T> {
  const releases = Array.from({ length: units }, () => shares.admit(organizationId, 1));
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
    // 6 of 8 held: a list (2) with three `co` terms (3) does not fit, a point read (1) does.
    await holding(h.globexId, 6, async () => {
      const filter = encodeURIComponent('emails.value co "a" or emails.value co "b" or emails.value co "c"');
      assert.equal((await scim(globex, `/Users?filter=${filter}`)).status, 429);
      assert.equal((await scim(globex, '/Users')).status, 200);
      assert.equal((await scim(globex, `/Users/${GLOBEX.bob}`)).status, 200);
    });
  });

  test('/v1: a page of 1,000 drives is refused where a small page fits, as a problem with Retry-After', async () => {
    const alice = await h.token('alice@example.com', 'drives_read users_read');
    const bobToken = await h.token('bob@example.com', 'drives_read users_read');
    // 4 of 8 held: a page of 1,000 costs 5.
    await holding(DEMO_ORGANIZATION, 4, async () => {
      const big = await v1(bobToken, '/v1/users/BobDriver1/drives?limit=1000');
      assert.equal(big.status, 429);
      assert.equal(big.headers['retry-after'], '1');
      assert.match(big.body.detail, /in flight/);
      assert.equal((await v1(bobToken, '/v1/users/BobDriver1/drives?limit=10')).status, 200);
      assert.equal((await v1(alice, '/v1/users/me')).status, 200);
    });
    assert.equal(shares.holding(DEMO_ORGANIZATION), 0);
  });

  test('the refusals are counted per organization and reason', async () => {
    const text = await metrics.registry.metrics();
    assert.match(
      text,
      new RegExp(
        `gateway_organization_share_refusals_total\\{[^}]*organization="${h.globexId}",reason="organization_share"`,
      ),
    );
  });
});
