import { Metrics } from '@mileage/runtime';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OrganizationShares } from './fair-share';
import { HttpProblem } from './problems';

const refused = (run: () => unknown) =>
  assert.throws(run, (err: unknown) => {
    assert.ok(err instanceof HttpProblem);
    assert.equal(err.status, 429);
    assert.equal(err.headers['Retry-After'], '1');
    return true;
  });

describe('OrganizationShares', () => {
  test('an organization holds at most its share; another gets in meanwhile', () => {
    const shares = new OrganizationShares({ capacity: 20, organizationShare: 0.25 });
    assert.equal(shares.perOrganization, 5);
    const held = [1, 2, 3, 4, 5].map(() => shares.admit(1, 1));
    refused(() => shares.admit(1, 1));
    const other = shares.admit(2, 3);
    assert.equal(shares.holding(2), 3);
    held[0]!();
    const again = shares.admit(1, 1);
    assert.equal(shares.holding(1), 5);
    [again, ...held.slice(1), other].forEach((release) => release());
    assert.equal(shares.holding(1), 0);
    assert.equal(shares.holding(2), 0);
  });

  test('a cost counts in units, and a request dearer than the share takes the whole share, alone', () => {
    const shares = new OrganizationShares({ capacity: 32, organizationShare: 0.25 });
    const costly = shares.admit(7, 65);
    assert.equal(shares.holding(7), 8);
    refused(() => shares.admit(7, 1));
    costly();
    const partial = shares.admit(7, 4.2);
    assert.equal(shares.holding(7), 5);
    refused(() => shares.admit(7, 4));
    shares.admit(7, 3)();
    partial();
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

  test('in-flight units and refusals are metrics per organization', async () => {
    const metrics = new Metrics('gateway');
    const shares = new OrganizationShares({ capacity: 4, organizationShare: 0.5, metrics });
    const release = shares.admit(3, 2);
    refused(() => shares.admit(3, 1));
    const text = await metrics.registry.metrics();
    assert.match(text, /gateway_organization_in_flight_units\{[^}]*organization="3"[^}]*\} 2/);
    assert.match(
      text,
      /gateway_organization_share_refusals_total\{[^}]*organization="3",reason="organization_share"[^}]*\} 1/,
    );
    release();
    assert.match(
      await metrics.registry.metrics(),
      /gateway_organization_in_flight_units\{[^}]*organization="3"[^}]*\} 0/,
    );
  });

  test('settings out of range are refused', () => {
    assert.throws(() => new OrganizationShares({ capacity: 0, organizationShare: 0.5 }));
    assert.throws(() => new OrganizationShares({ capacity: 10, organizationShare: 0 }));
    assert.throws(() => new OrganizationShares({ capacity: 10, organizationShare: 1.5 }));
  });
});
