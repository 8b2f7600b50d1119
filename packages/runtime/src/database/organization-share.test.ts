// The fairness of the per-organization share, without a database: places, waits, refusals and who gets a freed place.
import { status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AppError, ORGANIZATION_SHARE_EXHAUSTED, ORGANIZATION_SHARE_RETRY_AFTER_MS } from '../grpc/errors';
import { Metrics } from '../telemetry/metrics';
import { defaultOrganizationShare, OrganizationShare } from './organization-share';

/** Work that runs until the test lets it finish. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, work: () => opened.then(() => 'done') };
}

/** Settles the microtasks and timers already due, so what could start has started. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

const share = (options: Partial<ConstructorParameters<typeof OrganizationShare>[0]> = {}) =>
  new OrganizationShare({ poolSize: 4, perOrganization: 2, reserved: 1, waitMs: 50, pool: 'test', ...options });

describe('OrganizationShare', () => {
  test('A holding its share does not keep B waiting; A’s extra request waits, then is refused with a 429 reason', async () => {
    const s = share({ waitMs: 30 });
    const a = gate();
    const held = [s.run(1, a.work), s.run(1, a.work)];
    await turn();
    assert.equal(s.inUse(1), 2);

    let bDone = false;
    const b = s.run(2, async () => {
      bDone = true;
      return 'b';
    });
    await turn();
    assert.equal(bDone, true, 'B ran at once, with A at its share');
    assert.equal(await b, 'b');

    const extra = s.run(1, async () => 'never');
    await turn();
    assert.equal(s.waiters, 1, "A's third request waits");
    await assert.rejects(extra, (err: unknown) => {
      assert.ok(err instanceof AppError);
      assert.equal(err.code, status.RESOURCE_EXHAUSTED);
      assert.equal(err.details.reason, ORGANIZATION_SHARE_EXHAUSTED);
      assert.equal(err.details.retryAfterMs, ORGANIZATION_SHARE_RETRY_AFTER_MS);
      return true;
    });
    assert.equal(s.waiters, 0);
    a.open();
    assert.deepEqual(await Promise.all(held), ['done', 'done']);
    assert.equal(s.inUse(1), 0);
  });

  test('a waiter gets the place freed within its wait', async () => {
    const s = share({ waitMs: 10_000 });
    const a = gate();
    const first = s.run(1, a.work);
    const second = s.run(1, a.work);
    const third = s.run(1, async () => 'third');
    await turn();
    assert.equal(s.waiters, 1);
    a.open();
    assert.deepEqual(await Promise.all([first, second, third]), ['done', 'done', 'third']);
  });

  test('the reserve is never given to organizations: B waits once all organizations hold pool − reserved', async () => {
    const s = share({ poolSize: 4, perOrganization: 2, reserved: 1, waitMs: 20 });
    assert.equal(s.capacity, 3);
    const g = gate();
    const running = [s.run(1, g.work), s.run(1, g.work), s.run(2, g.work)];
    await turn();
    await assert.rejects(
      s.run(3, async () => 'c'),
      (err: AppError) => err.details.reason === ORGANIZATION_SHARE_EXHAUSTED,
    );
    g.open();
    await Promise.all(running);
  });

  test('a freed place goes to the waiting organization that holds the fewest, not to the oldest waiter', async () => {
    const s = share({ poolSize: 3, perOrganization: 2, reserved: 0, waitMs: 10_000 });
    const a = gate();
    const b = gate();
    const aHeld = [s.run(1, a.work), s.run(1, a.work)];
    const bHeld = s.run(2, b.work);
    await turn();
    const order: string[] = [];
    // A's third comes first but A is at its share; C holds nothing. When B's place frees, C gets it.
    const aThird = s.run(1, async () => void order.push('A'));
    const c = s.run(3, async () => void order.push('C'));
    await turn();
    assert.equal(s.waiters, 2);
    b.open();
    await Promise.all([bHeld, c]);
    assert.deepEqual(order, ['C']);
    a.open();
    await Promise.all([...aHeld, aThird]);
    assert.deepEqual(order, ['C', 'A']);
  });

  test('a place A gives back goes to B holding as many as A then holds, though A waited longer', async () => {
    const s = share({ poolSize: 3, perOrganization: 2, reserved: 0, waitMs: 10_000 });
    const a1 = gate();
    const rest = gate();
    const aHeld = [s.run(1, a1.work), s.run(1, rest.work)];
    const bHeld = s.run(2, rest.work);
    await turn();
    const order: string[] = [];
    const aNext = s.run(1, async () => void order.push('A'));
    const bNext = s.run(2, async () => {
      order.push('B');
      await rest.work();
    });
    await turn();
    a1.open();
    await aHeld[0];
    await turn();
    assert.deepEqual(order, ['B'], "A's freed place went to B (1 held) before A's older waiter (A then held 1 too)");
    assert.deepEqual([s.inUse(1), s.inUse(2), s.waiters], [1, 2, 1]);
    rest.open();
    await Promise.all([aHeld[1], bHeld, aNext, bNext]);
    assert.deepEqual(order, ['B', 'A']);
  });

  test('nested work of the same organization takes no second place (no wait on itself)', async () => {
    const s = share({ perOrganization: 1, waitMs: 10 });
    const inner = await s.run(1, () => s.run(1, async () => s.inUse(1)));
    assert.equal(inner, 1);
    assert.equal(s.inUse(1), 0);
  });

  test('a failing work gives its place back', async () => {
    const s = share({ perOrganization: 1 });
    await assert.rejects(
      s.run(1, async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(s.inUse(1), 0);
    assert.equal(await s.run(1, async () => 'ok'), 'ok');
  });

  test('metrics: places in use, waits and refusals per organization id', async () => {
    const metrics = new Metrics('share-test');
    const s = share({ perOrganization: 1, waitMs: 5, metrics });
    const g = gate();
    const held = s.run(7, g.work);
    await turn();
    await assert.rejects(s.run(7, async () => 'x'));
    const text = await metrics.registry.metrics();
    assert.match(text, /db_organization_connections_in_use\{[^}]*pool="test"[^}]*organization="7"[^}]*\} 1/);
    assert.match(text, /db_organization_waits_total\{[^}]*organization="7"[^}]*\} 1/);
    assert.match(text, /db_organization_refusals_total\{[^}]*organization="7"[^}]*\} 1/);
    assert.match(text, /db_organization_connections_limit\{[^}]*scope="organization"[^}]*\} 1/);
    g.open();
    await held;
  });

  test('defaults: half the pool per organization and a quarter reserved, each at least 1 (none reserved of 1)', () => {
    assert.deepEqual(defaultOrganizationShare(4), { perOrganization: 2, reserved: 1 });
    assert.deepEqual(defaultOrganizationShare(10), { perOrganization: 5, reserved: 2 });
    assert.deepEqual(defaultOrganizationShare(1), { perOrganization: 1, reserved: 0 });
    assert.throws(() => share({ poolSize: 2, reserved: 2 }), /fewer than the pool/);
  });
});
