// packages/client's sync walks against the real stack (tools/devstack's launchStack: embedded PostgreSQL, the services, the gateway,
// the development identity provider issuing real tokens), with the demo data's deletions and withdrawals (Bob deletes
// a reported and a personal drive and withdraws a report, Carol withdraws a report to group 1 and deletes a personal
// drive): the change feed's tombstones come out of the walks as `delete` events, and a watermark older than the
// tombstone retention is answered 410 and walked again in full.
import { launchStack, type LaunchedStack } from '@mileage/devstack';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  createMileageClient,
  oauthToken,
  syncReportedDrives,
  syncUserDrives,
  type MileageClient,
  type SyncEvent,
} from '@mileage/client';

let stack: LaunchedStack;
let tokenUrl: string;

before(async () => {
  stack = await launchStack();
  tokenUrl = `${stack.issuer}/protocol/openid-connect/token`;
});
after(async () => {
  await stack?.stop();
});

const clientOf = (username: string, scope: string): MileageClient =>
  createMileageClient({
    baseUrl: stack.gatewayUrl,
    token: oauthToken({
      tokenUrl,
      clientId: 'mileage-dev',
      grant: { grant_type: 'password', username, password: 'demo' },
      scope,
    }),
  });

async function collect<L, T>(walk: AsyncIterable<SyncEvent<L, T>>): Promise<SyncEvent<L, T>[]> {
  const events: SyncEvent<L, T>[] = [];
  for await (const e of walk) events.push(e);
  return events;
}
const ids = (events: SyncEvent<unknown, unknown>[], kind: 'upsert' | 'delete') =>
  events.flatMap((e) => (e.kind === kind ? [e.id] : []));

/** Group 1's change feed read with plain fetch, in one page: the ids of its tombstones and of its live reports. */
async function rawFeed(): Promise<{ live: string[]; deleted: string[] }> {
  const form = new URLSearchParams({
    grant_type: 'password',
    client_id: 'mileage-dev',
    username: 'alice@example.com',
    password: 'demo',
    scope: 'groups_read_reported_drives',
  });
  const { access_token } = (await (await fetch(tokenUrl, { method: 'POST', body: form })).json()) as {
    access_token: string;
  };
  const res = await fetch(`${stack.gatewayUrl}/v1/groups/1/reported-drives?limit=1000&include_deleted=true`, {
    headers: { authorization: `Bearer ${access_token}` },
  });
  assert.equal(res.status, 200);
  const { results } = (await res.json()) as { results: { id: string; deleted?: true }[] };
  return {
    live: results.filter((r) => !r.deleted).map((r) => r.id),
    deleted: results.filter((r) => r.deleted).map((r) => r.id),
  };
}

test('syncReportedDrives surfaces the demo data’s deleted drive and withdrawn reports of group 1 as delete events', async () => {
  const client = clientOf('alice@example.com', 'groups_read_reported_drives');
  const events = await collect(syncReportedDrives(client, '1', { includeDeleted: true, pageSize: 7 }));
  assert.deepEqual(events[0], { kind: 'reset', reason: 'initial' });
  const done = events.at(-1)!;
  assert.ok(done.kind === 'complete' && done.full && done.pages >= 5, JSON.stringify(done));
  const deletes = events.filter((e) => e.kind === 'delete');
  assert.equal(deletes.length, 3, 'Bob: one deleted, one withdrawn; Carol: one withdrawn');
  for (const e of deletes) assert.deepEqual(e.tombstone, { id: e.id, deleted: true, modified: e.modified });
  assert.equal(done.deletes, 3);
  const feed = await rawFeed();
  assert.deepEqual(ids(events, 'delete').sort(), [...feed.deleted].sort());
  assert.deepEqual(ids(events, 'upsert').sort(), [...feed.live].sort());
  assert.ok(!ids(events, 'upsert').some((id) => feed.deleted.includes(id)), 'no tombstone is also live');

  // Without include_deleted: the same live drives, no tombstones.
  const plain = await collect(syncReportedDrives(client, '1', { includeDeleted: false, pageSize: 50 }));
  assert.deepEqual(ids(plain, 'delete'), []);
  assert.deepEqual(ids(plain, 'upsert').sort(), ids(events, 'upsert').sort());

  // From the walk's watermark: nothing new.
  const next = await collect(syncReportedDrives(client, '1', { state: done.kind === 'complete' ? done.state : null }));
  assert.deepEqual(
    next.map((e) => e.kind),
    ['complete'],
  );
});

test('syncUserDrives surfaces a driver’s deleted drives (not the withdrawn report: that drive stays)', async () => {
  const bob = await collect(syncUserDrives(clientOf('bob@example.com', 'drives_read'), 'BobDriver1', { pageSize: 20 }));
  const deleted = bob.filter((e) => e.kind === 'delete');
  assert.equal(deleted.length, 2, 'Bob deleted a reported and a personal drive');
  for (const e of deleted)
    assert.deepEqual(e.tombstone, { drive_id: Number(e.id), deleted: true, modified: e.modified });
  assert.equal(ids(bob, 'upsert').length, 63);
  assert.ok(!ids(bob, 'upsert').some((id) => ids(bob, 'delete').includes(id)));
  const carol = await collect(syncUserDrives(clientOf('carol@example.com', 'drives_read'), 'CarolDrv01'));
  assert.equal(ids(carol, 'delete').length, 1, 'Carol deleted a personal drive');
  assert.equal(ids(carol, 'upsert').length, 64);
});

test('a watermark older than the tombstone retention (90 days): 410, then a full walk with the same tombstones', async () => {
  const client = clientOf('alice@example.com', 'groups_read_reported_drives');
  const watermark = new Date(Date.now() - 91 * 86_400_000).toISOString();
  const events = await collect(syncReportedDrives(client, '1', { state: { version: 1, watermark }, pageSize: 100 }));
  const first = events[0]!;
  assert.ok(first.kind === 'reset' && first.reason === 'resync-required', JSON.stringify(first));
  assert.match(first.detail ?? '', /full sync/i);
  const done = events.at(-1)!;
  assert.ok(done.kind === 'complete' && done.full && done.deletes === 3, JSON.stringify(done));
  const feed = await rawFeed();
  assert.deepEqual(ids(events, 'upsert').sort(), [...feed.live].sort());
  assert.deepEqual(ids(events, 'delete').sort(), [...feed.deleted].sort());
});
