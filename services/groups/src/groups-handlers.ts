import type { groupsV1 } from '@mileage/proto';
import { errors, type Handlers, requireListWindow } from '@mileage/runtime/grpc';
import { ONE_STATEMENT, readInCallOrganization } from '@mileage/runtime/database';
import { requireGroupId, requireUserId } from '@mileage/runtime/formats';
import { filterToSql } from '@mileage/scim-domain';
import { checkAdmin, GROUP_FILTER_TABLE } from './groups-repo';
import type { CallOrganization, GroupsServerDeps } from './organization-context';
import {
  eventsBefore,
  requireEventsLimit,
  validateDisplayName,
  validateExternalId,
  validateMemberChanges,
  validateMembers,
} from './validation';

type GroupHandlers = Omit<
  Handlers<groupsV1.GroupsServiceServer>,
  'setMemberRoles' | 'removeMembers' | 'eraseOrganization' | 'writeExportPart'
>;

/** Groups: reading them, their admins, creating and changing one, and the trail of their provisioning. */
export function groupHandlers({ read, write }: CallOrganization, deps: GroupsServerDeps): GroupHandlers {
  return {
    async getGroup(request, ctx) {
      requireGroupId(request.id, 'id');
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
        group: await write(ctx, (repo) => repo.create(request.displayName, request.members, ctx.trace)),
      };
    },

    async updateGroup(request, ctx) {
      requireGroupId(request.id, 'id');
      validateDisplayName(request.displayName, false);
      if (request.replaceMembers) validateMembers(request.members);
      if (request.replaceExternalId) validateExternalId(request.externalId);
      return { group: await write(ctx, (repo) => repo.update(request, ctx.trace)) };
    },

    async patchGroup(request, ctx) {
      requireGroupId(request.id, 'id');
      validateDisplayName(request.displayName, false);
      validateMemberChanges(request);
      if (request.replaceExternalId) validateExternalId(request.externalId);
      return { group: await write(ctx, (repo) => repo.patch(request, ctx.trace)) };
    },

    async listGroups(request, ctx) {
      requireListWindow(request);
      const condition = filterToSql(request.filter, GROUP_FILTER_TABLE);
      const { groups, total } = await read(ctx, (repo) =>
        repo.list(condition, request.offset, request.limit, request.excludeMembers, ctx.trace),
      );
      return { groups, totalSize: total };
    },

    async listProvisioningEvents(request, ctx) {
      requireEventsLimit(request.limit);
      const before = eventsBefore(request);
      return read(ctx, (repo) => repo.provisioningEvents(request.limit, before, ctx.trace));
    },
  };
}
