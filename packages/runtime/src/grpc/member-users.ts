import { usersV1 } from '@mileage/proto';
import type { CallSettings, PromiseClient } from './grpc-client';
import { MAX_BATCH_GET_USERS, slices } from './list-window';

/**
 * The live users among `ids` (each asked once) as a group's member list shows them: BatchGetUsers in its member view
 * (USER_VIEW_MEMBER), not whole profiles, the slices of a large group all at once, so its read takes one round trip,
 * not one per thousand members. A Users service of the release before answers whole profiles, which serve as well.
 */
export async function readMemberUsers(
  users: Pick<PromiseClient<usersV1.UsersServiceClient>, 'batchGetUsers'>,
  ids: readonly string[],
  call: CallSettings,
): Promise<usersV1.User[]> {
  const answers = await Promise.all(
    slices([...new Set(ids)], MAX_BATCH_GET_USERS).map((slice) =>
      users.batchGetUsers({ ids: slice, view: usersV1.UserView.USER_VIEW_MEMBER }, call),
    ),
  );
  return answers.flatMap((answer) => answer.users);
}
