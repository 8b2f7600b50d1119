import { usersV1 } from '@mileage/proto';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_BATCH_GET_USERS } from './list-window';
import { readMemberUsers } from './member-users';

test('members are read in the member view, in slices sent all at once, and answered together', async () => {
  const ids = Array.from({ length: 2 * MAX_BATCH_GET_USERS + 1 }, (_, i) => `M${String(i).padStart(9, '0')}`);
  const sent: usersV1.BatchGetUsersRequest[] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const release: (() => void)[] = [];
  const users = {
    async batchGetUsers(request: usersV1.BatchGetUsersRequest) {
      sent.push(request);
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      // Each answer waits until every slice has been sent: a read one slice after another would never finish.
      await new Promise<void>((resolve) => {
        release.push(resolve);
        if (release.length === 3) for (const r of release) r();
      });
      inFlight--;
      return { users: request.ids.map((id) => usersV1.User.fromPartial({ id })) };
    },
  };
  const found = await readMemberUsers(users, ids, {});
  assert.deepEqual(
    sent.map((r) => [r.ids.length, r.view]),
    [
      [MAX_BATCH_GET_USERS, usersV1.UserView.USER_VIEW_MEMBER],
      [MAX_BATCH_GET_USERS, usersV1.UserView.USER_VIEW_MEMBER],
      [1, usersV1.UserView.USER_VIEW_MEMBER],
    ],
  );
  assert.equal(mostInFlight, 3);
  assert.deepEqual(
    found.map((u) => u.id),
    ids,
  );
  assert.deepEqual(await readMemberUsers(users, [], {}), []);
});
