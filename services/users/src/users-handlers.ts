import type { usersV1 } from '@mileage/proto';
import { COSTLY_READ, ONE_STATEMENT } from '@mileage/runtime/database';
import { errors, type CallContext, type Handlers, MAX_BATCH_GET_USERS, requireListWindow } from '@mileage/runtime/grpc';
import { requireUserId, timestampToDate } from '@mileage/runtime/formats';
import { filterToSql } from '@mileage/scim-domain';
import {
  inCallOrganization,
  readInCallOrganization,
  readInCallScope,
  type UsersServerDeps,
} from './organization-context';
import { listProvisioningEvents, MAX_EVENTS_PAGE } from './provisioning-events';
import {
  findUsersByUserName,
  listUsers,
  matchesAtMostOne,
  readUser,
  readUsers,
  USER_FILTER_TABLE,
  UsersRepository,
} from './users-repo';
import { validateUserInput } from './validation';

/** The UsersService handlers (users.proto): a user's reads and writes, lists, lookups and provisioning trail. */
export function userHandlers(deps: UsersServerDeps): Handlers<usersV1.UsersServiceServer> {
  const users = <T>(ctx: CallContext, work: (repo: UsersRepository) => Promise<T>, options?: { read?: boolean }) =>
    inCallOrganization(deps, ctx, (trx, organizationId) => work(new UsersRepository(trx, organizationId)), options);
  const read = { read: true };

  return {
    async getUser(request, ctx) {
      requireUserId(request.id, 'id');
      const user = await readInCallScope(
        deps,
        ctx,
        (run, scope) => readUser(run, scope, request.id, request.includeDeleted, ctx.trace),
        ONE_STATEMENT,
      );
      if (!user) throw errors.notFound(`user ${request.id} not found`, 'USER_NOT_FOUND');
      return { user };
    },

    async batchGetUsers(request, ctx) {
      if (request.ids.length > MAX_BATCH_GET_USERS) {
        throw errors.invalidArgument(`at most ${MAX_BATCH_GET_USERS} ids per call`, [
          { field: 'ids', description: `at most ${MAX_BATCH_GET_USERS}` },
        ]);
      }
      request.ids.forEach((id, i) => requireUserId(id, `ids[${i}]`));
      return {
        users: await readInCallScope(
          deps,
          ctx,
          (run, scope) => readUsers(run, scope, request.ids, ctx.trace, request.view),
          ONE_STATEMENT,
        ),
      };
    },

    async createUser(request, ctx) {
      const user = validateUserInput(request.user, { idRequired: false });
      return { user: await users(ctx, (repo) => repo.create(user, request.audit, ctx.trace)) };
    },

    async updateUser(request, ctx) {
      const user = validateUserInput(request.user, { idRequired: true });
      return { user: await users(ctx, (repo) => repo.update(user, request.expectedVersion, request.audit, ctx.trace)) };
    },

    async deleteUser(request, ctx) {
      requireUserId(request.id, 'id');
      return {
        user: await users(ctx, (repo) => repo.delete(request.id, request.expectedVersion, request.audit, ctx.trace)),
      };
    },

    async listUsers(request, ctx) {
      requireListWindow(request);
      const condition = filterToSql(request.filter, USER_FILTER_TABLE);
      // A list under the costly statement timeout: a filter's scan cannot hold a connection for the general one.
      const { users: page, total } = await readInCallOrganization(
        deps,
        ctx,
        (run, organizationId) =>
          listUsers(run, organizationId, condition, request.offset, request.limit, ctx.trace, {
            atMostOne: matchesAtMostOne(request.filter),
          }),
        COSTLY_READ,
      );
      return { users: page, totalSize: total };
    },

    async batchFindUsersByUserName(request, ctx) {
      if (request.userNames.length > MAX_BATCH_GET_USERS) {
        throw errors.invalidArgument(`at most ${MAX_BATCH_GET_USERS} user names per call`, [
          { field: 'user_names', description: `at most ${MAX_BATCH_GET_USERS}` },
        ]);
      }
      const matches = await readInCallOrganization(
        deps,
        ctx,
        (run, organizationId) => findUsersByUserName(run, organizationId, request.userNames, ctx.trace),
        ONE_STATEMENT,
      );
      return { matches };
    },

    async listProvisioningEvents(request, ctx) {
      if (!Number.isInteger(request.limit) || request.limit < 1 || request.limit > MAX_EVENTS_PAGE)
        throw errors.invalidArgument(`limit must be 1..${MAX_EVENTS_PAGE}`, [
          { field: 'limit', description: `1..${MAX_EVENTS_PAGE}` },
        ]);
      if (request.beforeId !== 0 && !request.beforeTime)
        throw errors.invalidArgument('before_id needs before_time', [
          { field: 'before_time', description: 'required with before_id' },
        ]);
      const before = request.beforeTime && { time: timestampToDate(request.beforeTime), id: request.beforeId };
      return inCallOrganization(
        deps,
        ctx,
        (trx, organizationId) =>
          listProvisioningEvents(
            trx,
            organizationId,
            { limit: request.limit, ...(before ? { before } : {}) },
            ctx.trace,
          ),
        read,
      );
    },
  };
}
