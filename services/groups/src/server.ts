import { groupsV1 } from '@mileage/proto';
import {
  errors,
  inCallOrganization as runInCallOrganization,
  ONE_STATEMENT,
  readInCallOrganization,
  requireListWindow,
  type CallContext,
  type Handlers,
  type Knex,
  type ServiceRegistration,
} from '@mileage/runtime';
import { filterToSql } from '@mileage/scim-domain';
import { checkAdmin, GROUP_FILTER_TABLE, GroupsRepository } from './groups-repo';
import {
  eventsBefore,
  requireEventsLimit,
  requireGroupId,
  requireUserId,
  validateDisplayName,
  validateExternalId,
  validateMemberChanges,
  validateMembers,
} from './validation';

export interface GroupsServerDeps {
  knex: Knex;
}

/** The GroupsService handlers over the given database; process wiring lives in main.ts. */
export function createServer(deps: GroupsServerDeps): ServiceRegistration {
  /** `work` over the repository of the call's organization, in one transaction that declared it (inCallOrganization). */
  const inCallOrganization = <T>(ctx: CallContext, work: (repo: GroupsRepository) => Promise<T>): Promise<T> =>
    runInCallOrganization(deps.knex, ctx, (trx, organizationId) => work(new GroupsRepository(trx, organizationId)));
  /** The same for a read: run again while its connection turns out dropped (nothing was written). */
  const read = <T>(ctx: CallContext, work: (repo: GroupsRepository) => Promise<T>): Promise<T> =>
    runInCallOrganization(deps.knex, ctx, (trx, organizationId) => work(new GroupsRepository(trx, organizationId)), {
      read: true,
    });

  const handlers: Handlers<groupsV1.GroupsServiceServer> = {
    async getGroup(request, ctx) {
      requireGroupId(request.id);
      const group = await read(ctx, (repo) => repo.get(request.id, ctx.trace));
      if (!group) throw errors.notFound(`group ${request.id} not found`, 'GROUP_NOT_FOUND');
      return { group };
    },

    async listAdministeredGroups(request, ctx) {
      requireUserId(request.userId);
      return { groups: await read(ctx, (repo) => repo.administeredBy(request.userId, ctx.trace)) };
    },

    async checkGroupAdmin(request, ctx) {
      requireGroupId(request.groupId, 'group_id');
      requireUserId(request.userId);
      return readInCallOrganization(
        deps.knex,
        ctx,
        (run, organizationId) => checkAdmin(run, organizationId, request.groupId, request.userId, ctx.trace),
        ONE_STATEMENT,
      );
    },

    async createGroup(request, ctx) {
      validateDisplayName(request.displayName, true);
      validateMembers(request.members);
      return {
        group: await inCallOrganization(ctx, (repo) => repo.create(request.displayName, request.members, ctx.trace)),
      };
    },

    async updateGroup(request, ctx) {
      requireGroupId(request.id);
      validateDisplayName(request.displayName, false);
      if (request.replaceMembers) validateMembers(request.members);
      if (request.replaceExternalId) validateExternalId(request.externalId);
      return { group: await inCallOrganization(ctx, (repo) => repo.update(request, ctx.trace)) };
    },

    async patchGroup(request, ctx) {
      requireGroupId(request.id);
      validateDisplayName(request.displayName, false);
      validateMemberChanges(request);
      if (request.replaceExternalId) validateExternalId(request.externalId);
      return { group: await inCallOrganization(ctx, (repo) => repo.patch(request, ctx.trace)) };
    },

    async listGroups(request, ctx) {
      requireListWindow(request);
      const condition = filterToSql(request.filter, GROUP_FILTER_TABLE);
      const { groups, total } = await read(ctx, (repo) =>
        repo.list(condition, request.offset, request.limit, request.excludeMembers, ctx.trace),
      );
      return { groups, totalSize: total };
    },

    async setMemberRoles(request, ctx) {
      requireGroupId(request.groupId, 'group_id');
      if (!request.member)
        throw errors.invalidArgument('member is required', [{ field: 'member', description: 'required' }]);
      validateMembers([request.member], 'member');
      const member = request.member;
      return {
        group: await inCallOrganization(ctx, (repo) => repo.setMemberRoles(request.groupId, member, ctx.trace)),
      };
    },

    async removeMembers(request, ctx) {
      requireGroupId(request.groupId, 'group_id');
      request.userIds.forEach((id, i) => requireUserId(id, `user_ids[${i}]`));
      return {
        group: await inCallOrganization(ctx, (repo) => repo.removeMembers(request.groupId, request.userIds, ctx.trace)),
      };
    },

    async listProvisioningEvents(request, ctx) {
      requireEventsLimit(request.limit);
      const before = eventsBefore(request);
      return read(ctx, (repo) => repo.provisioningEvents(request.limit, before, ctx.trace));
    },
  };

  return { definition: groupsV1.GroupsServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}
