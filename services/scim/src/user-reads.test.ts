// The SCIM service's user reads of one event-loop turn share one owner call per organization and end-user context;
// nothing is kept for a later turn. The Users client is faked (a unit boundary): what is checked is what is asked.
import type { usersV1 } from '@mileage/proto';
import type { CallSettings, PromiseClient } from '@mileage/runtime/grpc';
import { stubUser } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UserReads } from './user-reads';

const user = (id: string, userName: string): usersV1.User => stubUser(id, userName);
const PEOPLE = [user('AnnUser001', 'ann@example.com'), user('BobUser001', 'bob@example.com')];

function fakeUsers(failWith?: Error) {
  const calls: { method: string; keys: string[]; call: CallSettings | undefined }[] = [];
  const client = {
    batchGetUsers: async ({ ids }: usersV1.BatchGetUsersRequest, call?: CallSettings) => {
      calls.push({ method: 'batchGetUsers', keys: ids, call });
      if (failWith) throw failWith;
      return { users: PEOPLE.filter((u) => ids.includes(u.id)) };
    },
    batchFindUsersByUserName: async ({ userNames }: usersV1.BatchFindUsersByUserNameRequest, call?: CallSettings) => {
      calls.push({ method: 'batchFindUsersByUserName', keys: userNames, call });
      if (failWith) throw failWith;
      return {
        matches: userNames.flatMap((name, index) => {
          const found = PEOPLE.find((u) => u.userName === name.toLowerCase());
          return found ? [{ index, user: found }] : [];
        }),
      };
    },
  } as unknown as PromiseClient<usersV1.UsersServiceClient>;
  return { client, calls };
}

const demo: CallSettings = { organizationId: 1, requestId: 'r1', endUser: { token: 'ctx-okta', cert: 'gateway' } };

test('the reads of one turn share one call per kind; each gets its own answer', async () => {
  const { client, calls } = fakeUsers();
  const reads = new UserReads(client);
  const answers = await Promise.all([
    reads.byUserName('ANN@example.com', demo),
    reads.byUserName('nobody@example.com', { ...demo, requestId: 'r2' }),
    reads.byUserName('bob@example.com', { ...demo, requestId: 'r3' }),
    reads.byUserName('ANN@example.com', { ...demo, requestId: 'r4' }),
    reads.byId('BobUser001', { ...demo, requestId: 'r5' }),
    reads.byId('Missing001', { ...demo, requestId: 'r6' }),
  ]);
  assert.deepEqual(
    answers.map((u) => u?.id),
    ['AnnUser001', undefined, 'BobUser001', 'AnnUser001', 'BobUser001', undefined],
  );
  assert.deepEqual(
    calls.map(({ method, keys, call }) => ({ method, keys, requestId: call?.requestId })),
    [
      { method: 'batchGetUsers', keys: ['BobUser001', 'Missing001'], requestId: 'r1' },
      {
        method: 'batchFindUsersByUserName',
        keys: ['ANN@example.com', 'nobody@example.com', 'bob@example.com'],
        requestId: 'r1',
      },
    ],
  );
});

test('reads of another organization or under another end-user context get calls of their own', async () => {
  const { client, calls } = fakeUsers();
  const reads = new UserReads(client);
  await Promise.all([
    reads.byUserName('ann@example.com', demo),
    reads.byUserName('ann@example.com', { ...demo, organizationId: 2 }),
    reads.byUserName('ann@example.com', { ...demo, endUser: { token: 'ctx-entra', cert: 'gateway' } }),
    reads.byUserName('bob@example.com', demo),
  ]);
  assert.deepEqual(
    calls.map(({ keys, call }) => ({ keys, organizationId: call?.organizationId, token: call?.endUser?.token })),
    [
      { keys: ['ann@example.com', 'bob@example.com'], organizationId: 1, token: 'ctx-okta' },
      { keys: ['ann@example.com'], organizationId: 2, token: 'ctx-okta' },
      { keys: ['ann@example.com'], organizationId: 1, token: 'ctx-entra' },
    ],
  );
});

test('nothing is kept for a later turn: the next read asks again', async () => {
  const { client, calls } = fakeUsers();
  const reads = new UserReads(client);
  assert.equal((await reads.byId('AnnUser001', demo))?.id, 'AnnUser001');
  assert.equal((await reads.byId('AnnUser001', demo))?.id, 'AnnUser001');
  assert.equal(calls.length, 2);
});

test("a failed call rejects every read that shared it with the owner's error", async () => {
  const unavailable = Object.assign(new Error('unavailable'), { code: 14 });
  const { client } = fakeUsers(unavailable);
  const reads = new UserReads(client);
  const settled = await Promise.allSettled([
    reads.byUserName('ann@example.com', demo),
    reads.byUserName('bob@example.com', demo),
    reads.byId('AnnUser001', demo),
  ]);
  assert.deepEqual(
    settled.map((s) => (s.status === 'rejected' ? s.reason : s.value)),
    [unavailable, unavailable, unavailable],
  );
});

test('more reads in a turn than one call takes are split into calls of at most 1,000', async () => {
  const { client, calls } = fakeUsers();
  const reads = new UserReads(client);
  const names = Array.from({ length: 2_500 }, (_, i) => `user${i}@example.com`);
  const answers = await Promise.all([
    ...names.map((n) => reads.byUserName(n, demo)),
    reads.byUserName('bob@example.com', demo),
  ]);
  assert.deepEqual(
    calls.map((c) => c.keys.length),
    [1000, 1000, 501],
  );
  assert.equal(answers.at(-1)?.id, 'BobUser001');
  assert.equal(answers.filter(Boolean).length, 1);
});
