import { groupsV1 } from '@mileage/proto';
import { errors, requireListWindow, type Handlers, type Knex, type ServiceRegistration } from '@mileage/runtime';
import { filterToSql } from '@mileage/scim-domain';
import { GROUP_FILTER_TABLE, GroupsRepository } from './groups-repo';
import { requireGroupId, requireUserId, validateDisplayName, validateExternalId, validateMembers } from './validation';

export interface GroupsServerDeps {
  knex: Knex;
}

/** The GroupsService handlers over the given database; process wiring lives in main.ts. */
export function createServer(deps: GroupsServerDeps): ServiceRegistration {
  const repo = new GroupsRepository(deps.knex);

  const handlers: Handlers<groupsV1.GroupsServiceServer> = {
    async getGroup(request, ctx) {
      requireGroupId(request.id);
      const group = await repo.get(request.id, ctx.trace);
      if (!group) throw errors.notFound(`group ${request.id} not found`, 'GROUP_NOT_FOUND');
      return { group };
    },

    async listAdministeredGroups(request, ctx) {
      requireUserId(request.userId);
      return { groups: await repo.administeredBy(request.userId, ctx.trace) };
    },

    async checkGroupAdmin(request, ctx) {
      requireGroupId(request.groupId, 'group_id');
      requireUserId(request.userId);
      return repo.checkAdmin(request.groupId, request.userId, ctx.trace);
    },

    async createGroup(request, ctx) {
      validateDisplayName(request.displayName, true);
      validateMembers(request.members);
      return { group: await repo.create(request.displayName, request.members, ctx.trace) };
    },

    async updateGroup(request, ctx) {
      requireGroupId(request.id);
      validateDisplayName(request.displayName, false);
      if (request.replaceMembers) validateMembers(request.members);
      if (request.replaceExternalId) validateExternalId(request.externalId);
      return { group: await repo.update(request, ctx.trace) };
    },

    async listGroups(request, ctx) {
      requireListWindow(request);
      const condition = filterToSql(request.filter, GROUP_FILTER_TABLE);
      const { groups, total } = await repo.list(
        condition,
        request.offset,
        request.limit,
        request.excludeMembers,
        ctx.trace,
      );
      return { groups, totalSize: total };
    },

    async setMemberRoles(request, ctx) {
      requireGroupId(request.groupId, 'group_id');
      if (!request.member)
        throw errors.invalidArgument('member is required', [{ field: 'member', description: 'required' }]);
      validateMembers([request.member], 'member');
      return { group: await repo.setMemberRoles(request.groupId, request.member, ctx.trace) };
    },

    async removeMembers(request, ctx) {
      requireGroupId(request.groupId, 'group_id');
      request.userIds.forEach((id, i) => requireUserId(id, `user_ids[${i}]`));
      return { group: await repo.removeMembers(request.groupId, request.userIds, ctx.trace) };
    },
  };

  return { definition: groupsV1.GroupsServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}
