// The Users process with each organization's share of its pool (organization-share.ts): an organization whose share
// is taken gets RESOURCE_EXHAUSTED ORGANIZATION_SHARE_EXHAUSTED (the 429 of every HTTP surface) while another
// organization's reads and the reads across organizations (the gateway's account reads) are answered.
import { status } from '@grpc/grpc-js';
import { filterV1 } from '@mileage/proto';
import { organizationLimits } from '@mileage/runtime/database';
import { rejection } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { user, usersSuite } from './users-suite.fixture';

const suite = usersSuite('users_share', {
  poolMax: 4,
  organizationShare: { perOrganization: 2, reserved: 1, waitMs: 250 },
  costlyStatementTimeoutMs: 2_000,
});
const DEMO = 1;
let globex: number;
let demoUserId: string;

/** A filter of `n` unindexed scans of the addresses, as a flood would send. */
const addressScans = (n: number): filterV1.Filter => ({
  expr: {
    $case: 'anyOf',
    value: {
      filters: Array.from({ length: n }, (_, i) => ({
        expr: {
          $case: 'comparison' as const,
          value: {
            attribute: 'emails.value',
            operator: filterV1.Operator.OPERATOR_CO,
            value: { $case: 'stringValue' as const, value: `user${i}@` },
          },
        },
      })),
    },
  },
});

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe("the Users process: one organization's flood and another's reads", () => {
  before(async () => {
    globex = (await suite.organizations.createOrganization({ name: 'Globex', alias: 'globex' })).organization!.id;
    for (let i = 0; i < 30; i++)
      await suite
        .usersIn(globex)
        .createUser({ user: user({ emails: [{ value: `u${i}@globex.example`, type: 'work', primary: true }] }) });
    demoUserId = (await suite.usersIn(DEMO).createUser({ user: user() })).user!.id;
  });

  test('with its share taken, the organization is refused with the 429 reason and a RetryInfo; others are answered', async () => {
    const share = organizationLimits(suite.runtime.knex)!.share!;
    const held = gate();
    // Globex's share taken (as by two lists in flight), held until the test lets go.
    const holders = [share.run(globex, () => held.opened), share.run(globex, () => held.opened)];
    try {
      const refused = await rejection(
        suite.usersIn(globex).listUsers({ offset: 0, limit: 100, filter: addressScans(8) }),
      );
      assert.equal(refused.code, status.RESOURCE_EXHAUSTED);
      assert.equal(refused.reason, 'ORGANIZATION_SHARE_EXHAUSTED');
      assert.ok(refused.retryAfterMs! >= 1_000);
      assert.doesNotMatch(refused.message, /globex|users\b/i);

      // Demo Org's point read and list, and the read across organizations every /v1 request makes, are answered.
      assert.equal((await suite.usersIn(DEMO).getUser({ id: demoUserId, includeDeleted: false })).user!.id, demoUserId);
      assert.ok((await suite.usersIn(DEMO).listUsers({ offset: 0, limit: 10 })).totalSize >= 1);
      const across = await suite.users.batchGetUsers({ ids: [demoUserId] });
      assert.deepEqual(
        across.users.map((u) => [u.id, u.organizationId]),
        [[demoUserId, DEMO]],
      );
    } finally {
      held.open();
      await Promise.all(holders);
    }
    // Its share free again, Globex's list is answered.
    const page = await suite.usersIn(globex).listUsers({ offset: 0, limit: 100, filter: addressScans(8) });
    assert.equal(page.totalSize, 0);
  });

  test("a flood of one organization's costly lists: it gets answers or the 429 reason, the others every answer", async () => {
    const flood = Array.from({ length: 24 }, () =>
      suite.usersIn(globex).listUsers({ offset: 0, limit: 100, filter: addressScans(8) }),
    );
    const quiet = Array.from({ length: 12 }, (_, i) =>
      i % 2
        ? suite.usersIn(DEMO).getUser({ id: demoUserId, includeDeleted: false })
        : suite.users.batchGetUsers({ ids: [demoUserId] }),
    );
    const [floodOutcomes, quietOutcomes] = await Promise.all([Promise.allSettled(flood), Promise.allSettled(quiet)]);
    for (const outcome of quietOutcomes) assert.equal(outcome.status, 'fulfilled');
    for (const outcome of floodOutcomes) {
      if (outcome.status === 'fulfilled') continue;
      const refused = await rejection(Promise.reject(outcome.reason as Error));
      assert.deepEqual([refused.code, refused.reason], [status.RESOURCE_EXHAUSTED, 'ORGANIZATION_SHARE_EXHAUSTED']);
    }
    const share = organizationLimits(suite.runtime.knex)!.share!;
    assert.deepEqual([share.inUse(globex), share.inUse(DEMO), share.waiters], [0, 0, 0]);
  });
});
