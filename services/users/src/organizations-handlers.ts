import type { usersV1 } from '@mileage/proto';
import { errors, type Handlers, isOrganizationId } from '@mileage/runtime/grpc';
import { isOrganizationAlias, ORGANIZATION_ALIAS_RULE, requireUserId } from '@mileage/runtime/formats';

import { OrganizationsRepository } from './organizations-repo';
import { inCallOrganization } from '@mileage/runtime/database';
import { type UsersServerDeps } from './organization-context';
import type { ExportHandlers } from './exports-handlers';
import type { OffboardingHandlers } from './offboarding-handlers';
import type { ScimTokenHandlers } from './scim-tokens-handlers';
import { UsersRepository } from './users-repo';
import { refuse, textViolations } from './validation';

/** The actor of the trail's entry for a change of the organization admin role: an operator's act (npm run org). */
export const OPERATOR_ACTOR = 'operator';

type OrganizationHandlers = Omit<
  Handlers<usersV1.OrganizationsServiceServer>,
  keyof ScimTokenHandlers | keyof OffboardingHandlers | keyof ExportHandlers
>;

/** The OrganizationsService's organizations (users.proto) and their admins. */
export function organizationHandlers(deps: UsersServerDeps): OrganizationHandlers {
  const organizations = new OrganizationsRepository(deps.knex);

  return {
    async getOrganization(request, ctx) {
      const key = request.key;
      if (!key) throw errors.invalidArgument('id or alias is required', [{ field: 'key', description: 'required' }]);
      // A key no organization can have is looked up nowhere.
      const organization =
        key.$case === 'id'
          ? isOrganizationId(key.value) && (await organizations.get({ id: key.value }, ctx.trace))
          : isOrganizationAlias(key.value) && (await organizations.get({ alias: key.value }, ctx.trace));
      if (!organization) throw errors.notFound('organization not found', 'ORGANIZATION_NOT_FOUND');
      return { organization };
    },

    async createOrganization(request, ctx) {
      const violations = textViolations('name', request.name.trim(), true);
      if (!isOrganizationAlias(request.alias))
        violations.push({ field: 'alias', description: ORGANIZATION_ALIAS_RULE });
      refuse(violations, 'organization');
      return { organization: await organizations.create(request.name.trim(), request.alias, ctx.trace) };
    },

    async setOrganizationAdmin(request, ctx) {
      requireUserId(request.userId, 'user_id');
      const user = await inCallOrganization(deps.knex, ctx, (trx, organizationId) =>
        new UsersRepository(trx, organizationId).setOrganizationAdmin(
          request.userId,
          request.organizationAdmin,
          { actor: OPERATOR_ACTOR, requestId: ctx.requestId },
          ctx.trace,
        ),
      );
      if (!user) throw errors.notFound(`user ${request.userId} not found`, 'USER_NOT_FOUND');
      return { user };
    },
  };
}
