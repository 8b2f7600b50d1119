import type { groupsV1 } from '@mileage/proto';
import { errors, type Handlers } from '@mileage/runtime/grpc';
import { requireGroupId, requireUserId } from '@mileage/runtime/formats';
import type { CallOrganization } from './organization-context';
import { validateMembers } from './validation';

type MemberHandlers = Pick<Handlers<groupsV1.GroupsServiceServer>, 'setMemberRoles' | 'removeMembers'>;

/** A group's members: their roles, and their removal. */
export function memberHandlers({ write }: CallOrganization): MemberHandlers {
  return {
    async setMemberRoles(request, ctx) {
      requireGroupId(request.groupId, 'group_id');
      if (!request.member)
        throw errors.invalidArgument('member is required', [{ field: 'member', description: 'required' }]);
      validateMembers([request.member], 'member');
      const member = request.member;
      return {
        group: await write(ctx, (repo) => repo.setMemberRoles(request.groupId, member, ctx.trace)),
      };
    },

    async removeMembers(request, ctx) {
      requireGroupId(request.groupId, 'group_id');
      request.userIds.forEach((id, i) => requireUserId(id, `user_ids[${i}]`));
      return {
        group: await write(ctx, (repo) => repo.removeMembers(request.groupId, request.userIds, ctx.trace)),
      };
    },
  };
}
