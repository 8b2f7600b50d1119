import { Metrics } from '@mileage/runtime/telemetry';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ACTIVE_WINDOW_MS, OrganizationShares } from './fair-share';
import { HttpProblem } from './problems';

const refused = (run: () => unknown, retryAfter = '1') =>
  assert.throws(run, (err: unknown) => {
    assert.ok(err instanceof HttpProblem);
    assert.equal(err.status, 429);
    assert.equal(err.headers['Retry-After'], retryAfter);
    return true;
  });

/** Shares bounded per second only (a capacity in flight no test reaches), a second's burst, on `time`. */
function perSecond(unitsPerSecond: number, organizationShare: number, time: ReturnType<typeof clock>) {
  return new OrganizationShares({ capacity: 1_000, unitsPerSecond, organizationShare, burstSeconds: 1, now: time.now });
}

/** A clock the test moves. */
function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

describe('OrganizationShares in flight', () => {
  test('while another organization is active, one holds at most its share; the other gets in', () => {
    const shares = new OrganizationShares({ capacity: 20, organizationShare: 0.25 });
    assert.equal(shares.perOrganization, 5);
    const other = shares.admit(2, 1);
    const held = [1, 2, 3, 4, 5].map(() => shares.admit(1, 1));
    refused(() => shares.admit(1, 1));
    const otherAgain = shares.admit(2, 3);
    assert.equal(shares.holding(2), 4);
    held[0]!();
    const again = shares.admit(1, 1);
    assert.equal(shares.holding(1), 5);
    [again, ...held.slice(1), other, otherAgain].forEach((release) => release());
    assert.equal(shares.holding(1), 0);
    assert.equal(shares.holding(2), 0);
  });

  test('an organization alone on the replica is bounded by no share (one organization behaves as without shares)', () => {
    const time = clock();
    const shares = new OrganizationShares({ capacity: 8, unitsPerSecond: 8, organizationShare: 0.25, now: time.now });
    const releases = Array.from({ length: 20 }, () => shares.admit(1, 5));
    assert.equal(shares.holding(1), 20 * 2);
    releases.forEach((release) => release());
    // Another organization that was active long enough ago no longer counts.
    shares.admit(2, 1)();
    time.advance(ACTIVE_WINDOW_MS);
    shares.admit(1, 1)();
  });

  test('an organization admitted within the last second counts as active, though it holds nothing now', () => {
    const time = clock();
    const shares = new OrganizationShares({ capacity: 8, organizationShare: 0.25, now: time.now });
    shares.admit(2, 1)();
    const held = [shares.admit(1, 1), shares.admit(1, 1)];
    refused(() => shares.admit(1, 1));
    time.advance(ACTIVE_WINDOW_MS);
    const alone = shares.admit(1, 1);
    [...held, alone].forEach((release) => release());
  });

  test('a cost counts in units, and a request dearer than the share takes the whole share, alone', () => {
    const shares = new OrganizationShares({ capacity: 32, organizationShare: 0.25 });
    const other = shares.admit(2, 1);
    const costly = shares.admit(7, 65);
    assert.equal(shares.holding(7), 8);
    refused(() => shares.admit(7, 1));
    costly();
    const partial = shares.admit(7, 4.2);
    assert.equal(shares.holding(7), 5);
    refused(() => shares.admit(7, 4));
    shares.admit(7, 3)();
    partial();
    other();
  });

  test('giving units back twice gives them back once', () => {
    const shares = new OrganizationShares({ capacity: 8, organizationShare: 1 });
    const first = shares.admit(1, 3);
    const second = shares.admit(1, 2);
    first();
    first();
    assert.equal(shares.holding(1), 2);
    second();
  });

  test('a full replica admits only organizations below an equal part of it', () => {
    // Two organizations may each hold the whole replica; together they fill it.
    const shares = new OrganizationShares({ capacity: 12, organizationShare: 1 });
    const noisy = shares.admit(1, 10);
    const quiet = shares.admit(2, 2);
    // Full: the noisy one holds 10 of 12, more than half, so it waits; the quiet one holds 2 and still gets in.
    refused(() => shares.admit(1, 1));
    const quietAgain = shares.admit(2, 1);
    // A third organization, holding nothing, gets its equal part (12 / 3) even now.
    const third = shares.admit(3, 4);
    refused(() => shares.admit(3, 1));
    [noisy, quiet, quietAgain, third].forEach((release) => release());
  });
});

describe('OrganizationShares per second', () => {
  test('while another is active, an organization spends at most its share a second; the other is not charged', () => {
    const time = clock();
    // 40 units a second an organization.
    const shares = perSecond(160, 0.25, time);
    assert.equal(shares.perSecond, 40);
    shares.admit(2, 1)();
    for (let i = 0; i < 4; i++) shares.admit(1, 10)();
    refused(() => shares.admit(1, 10));
    assert.equal(shares.holding(1), 0, 'a refused request holds nothing');
    shares.admit(2, 30)();
    // A quarter of a second refills 10 units: enough to start a request dearer than that, which runs into debt.
    time.advance(250);
    shares.admit(1, 30)();
    refused(() => shares.admit(1, 1));
    // The debt (20 units) is paid in half a second, and a unit more refills in 25 ms.
    time.advance(500);
    refused(() => shares.admit(1, 1));
    time.advance(25);
    shares.admit(1, 1)();
  });

  test('a page dearer than a second of the share runs once the bucket has anything left, then its debt is paid', () => {
    const time = clock();
    const shares = perSecond(40, 1, time);
    shares.admit(2, 1)();
    shares.admit(1, 3)();
    shares.admit(1, 251)();
    // At most a second's debt: 40 units, paid in a second.
    refused(() => shares.admit(1, 1), '1');
    time.advance(1_001);
    shares.admit(2, 1)();
    shares.admit(1, 1)();
  });

  test('alone, spending is counted into debt, so a flood meeting a neighbour waits up to a second', () => {
    const time = clock();
    const shares = perSecond(40, 1, time);
    for (let i = 0; i < 10; i++) shares.admit(1, 40)();
    // The neighbour arrives: the flood owes a second's worth (the debt is bounded), so it waits a second.
    shares.admit(2, 1)();
    refused(() => shares.admit(1, 40), '1');
    // A request dearer than a second's share is counted as the share.
    time.advance(2_000);
    shares.admit(2, 1)();
    shares.admit(1, 500)();
  });
});

describe('OrganizationShares burst', () => {
  test('by default a bucket holds four seconds of the share: a large page and the clicks after it pass', () => {
    const time = clock();
    // 125 units a second, as the defaults give (0.125 of 1,000).
    const shares = new OrganizationShares({
      capacity: 256,
      unitsPerSecond: 1_000,
      organizationShare: 0.125,
      now: time.now,
    });
    shares.admit(1, 1)();
    for (const price of [1, 1, 251, 1, 1, 6]) shares.admit(2, price)();
    // A flood spends the rest of the burst (500 units, 239 left: ten pages of 26, the last into debt)…
    for (let i = 0; i < 10; i++) shares.admit(2, 26)();
    refused(() => shares.admit(2, 26));
    // …then gets the share: 125 units a second (21 of them pay the debt).
    time.advance(1_000);
    shares.admit(1, 1)();
    for (let i = 0; i < 4; i++) shares.admit(2, 26)();
    refused(() => shares.admit(2, 26));
  });
});

describe('OrganizationShares metrics and settings', () => {
  test('in-flight units and refusals are metrics per organization and reason', async () => {
    const metrics = new Metrics('gateway');
    const shares = new OrganizationShares({
      capacity: 4,
      unitsPerSecond: 6,
      organizationShare: 0.5,
      burstSeconds: 1,
      metrics,
    });
    const other = shares.admit(9, 1);
    const release = shares.admit(3, 2);
    refused(() => shares.admit(3, 1));
    const text = await metrics.registry.metrics();
    assert.match(text, /gateway_organization_in_flight_units\{[^}]*organization="3"[^}]*\} 2/);
    assert.match(text, /gateway_organization_units_total\{[^}]*organization="3"[^}]*\} 2/);
    assert.match(text, /gateway_organization_share_refusals_total\{[^}]*organization="3",reason="in_flight"[^}]*\} 1/);
    release();
    // 3 units a second: 2 spent, then 2 more into debt, then nothing left.
    shares.admit(3, 2)();
    refused(() => shares.admit(3, 1));
    assert.match(
      await metrics.registry.metrics(),
      /gateway_organization_share_refusals_total\{[^}]*organization="3",reason="per_second"[^}]*\} 1/,
    );
    assert.match(
      await metrics.registry.metrics(),
      /gateway_organization_in_flight_units\{[^}]*organization="3"[^}]*\} 0/,
    );
    other();
  });

  test('settings out of range are refused', () => {
    assert.throws(() => new OrganizationShares({ capacity: 0, organizationShare: 0.5 }));
    assert.throws(() => new OrganizationShares({ capacity: 10, organizationShare: 0 }));
    assert.throws(() => new OrganizationShares({ capacity: 10, organizationShare: 1.5 }));
  });
});
