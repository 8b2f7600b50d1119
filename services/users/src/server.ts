import { usersV1 } from '@mileage/proto';
import {
  errors,
  isUserId,
  requireListWindow,
  type Handlers,
  type Knex,
  type ServiceRegistration,
} from '@mileage/runtime';
import { filterToSql } from '@mileage/scim-domain';
import { matchesAtMostOne, MAX_BATCH, USER_FILTER_TABLE, UsersRepository } from './users-repo';
import { validateUserInput } from './validation';

export interface UsersServerDeps {
  knex: Knex;
}

/** The UsersService handlers over the given database; process wiring lives in main.ts. */
export function createServer(deps: UsersServerDeps): ServiceRegistration {
  const repo = new UsersRepository(deps.knex);

  const handlers: Handlers<usersV1.UsersServiceServer> = {
    async getUser(request, ctx) {
      requireUserId(request.id, 'id');
      const user = await repo.get(request.id, request.includeDeleted, ctx.trace);
      if (!user) throw errors.notFound(`user ${request.id} not found`, 'USER_NOT_FOUND');
      return { user };
    },

    async batchGetUsers(request, ctx) {
      if (request.ids.length > MAX_BATCH) {
        throw errors.invalidArgument(`at most ${MAX_BATCH} ids per call`, [
          { field: 'ids', description: `at most ${MAX_BATCH}` },
        ]);
      }
      request.ids.forEach((id, i) => requireUserId(id, `ids[${i}]`));
      return { users: await repo.getMany(request.ids, ctx.trace) };
    },

    async createUser(request, ctx) {
      const user = validateUserInput(request.user, { idRequired: false });
      return { user: await repo.create(user, request.audit, ctx.trace) };
    },

    async updateUser(request, ctx) {
      const user = validateUserInput(request.user, { idRequired: true });
      return { user: await repo.update(user, request.expectedVersion, request.audit, ctx.trace) };
    },

    async deleteUser(request, ctx) {
      requireUserId(request.id, 'id');
      return { user: await repo.delete(request.id, request.expectedVersion, request.audit, ctx.trace) };
    },

    async listUsers(request, ctx) {
      requireListWindow(request);
      const condition = filterToSql(request.filter, USER_FILTER_TABLE);
      const { users, total } = await repo.list(condition, request.offset, request.limit, ctx.trace, {
        atMostOne: matchesAtMostOne(request.filter),
      });
      return { users, totalSize: total };
    },
  };

  return { definition: usersV1.UsersServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}

function requireUserId(id: string, field: string): void {
  if (!isUserId(id))
    throw errors.invalidArgument(`${field} must be exactly 10 characters [A-Za-z0-9]`, [
      { field, description: 'invalid user id' },
    ]);
}
