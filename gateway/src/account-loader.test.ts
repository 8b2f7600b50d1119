import { usersV1 } from '@mileage/proto';
import type { CallSettings, PromiseClient } from '@mileage/runtime/grpc';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AccountLoader } from './account-loader';

const { USER_VIEW_DRIVER } = usersV1.UserView;

/** A Users client that records its calls and knows users A…, B… of organizations 1 and 2. */
function recordingUsers() {
  const calls: { method: string; ids: string[]; organizationId: number | undefined }[] = [];
  const organizationOf = (id: string) => (id.startsWith('A') ? 1 : 2);
  const user = (id: string) => ({ id, active: true, organizationId: organizationOf(id) }) as usersV1.User;
  const users = {
    // Without an organization the Users service answers across organizations (the callers' own accounts).
    batchGetUsers: async ({ ids }: usersV1.BatchGetUsersRequest, call?: CallSettings) => {
      calls.push({ method: 'batchGetUsers', ids, organizationId: call?.organizationId });
      const scope = call?.organizationId;
      return { users: ids.filter((id) => scope === undefined || organizationOf(id) === scope).map(user) };
    },
  } as unknown as PromiseClient<usersV1.UsersServiceClient>;
  return { users, calls };
}

test("one turn's lookups: one BatchGetUsers for the callers (without an organization) and one per organization", async () => {
  const { users, calls } = recordingUsers();
  const loader = new AccountLoader(users);
  const found = await Promise.all([
    // The first lookup of the turn acts in an organization: the callers' reads must not borrow it.
    loader.load('A000000001', { organizationId: 1 }),
    loader.load('A000000002', {}),
    loader.load('B000000001', {}),
    loader.load('A000000003', { organizationId: 1 }),
    loader.load('A000000001', { organizationId: 1 }),
    loader.load('B000000002', { organizationId: 2 }),
    // Another organization's user asked inside organization 1: not found, whatever exists elsewhere.
    loader.load('B000000003', { organizationId: 1 }),
  ]);
  assert.deepEqual(
    found.map((u) => u?.id),
    ['A000000001', 'A000000002', 'B000000001', 'A000000003', 'A000000001', 'B000000002', undefined],
  );
  assert.deepEqual(
    calls.sort((a, b) => a.ids[0]!.localeCompare(b.ids[0]!)),
    [
      { method: 'batchGetUsers', ids: ['A000000001', 'A000000003', 'B000000003'], organizationId: 1 },
      { method: 'batchGetUsers', ids: ['A000000002', 'B000000001'], organizationId: undefined },
      { method: 'batchGetUsers', ids: ['B000000002'], organizationId: 2 },
    ],
  );
});

test("a loader reads its view: a caller's account by default, what a driver shows for the drivers", async () => {
  const views: (usersV1.UserView | undefined)[] = [];
  const users = {
    batchGetUsers: async ({ ids, view }: usersV1.BatchGetUsersRequest) => {
      views.push(view);
      return { users: ids.map((id) => ({ id }) as usersV1.User) };
    },
  } as unknown as PromiseClient<usersV1.UsersServiceClient>;
  await new AccountLoader(users).load('A000000001', {});
  await new AccountLoader(users, USER_VIEW_DRIVER).load('A000000001', { organizationId: 1 });
  assert.deepEqual(views, [usersV1.UserView.USER_VIEW_ACCOUNT, USER_VIEW_DRIVER]);
});

test('a loader remembers the organization of each user it read, for the next request of that user', async () => {
  const { users } = recordingUsers();
  const loader = new AccountLoader(users);
  assert.equal(loader.knownOrganization('B000000001'), undefined);
  await Promise.all([loader.load('A000000001', {}), loader.load('B000000001', {}), loader.load('Z000000000', {})]);
  assert.equal(loader.knownOrganization('A000000001'), 1);
  assert.equal(loader.knownOrganization('B000000001'), 2);
});
