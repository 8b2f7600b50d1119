import { usersV1 } from '@mileage/proto';
import {
  acrossOrganizations,
  droppedReadAttempts,
  errors,
  isOrganizationAlias,
  isOrganizationId,
  isUuid,
  ORGANIZATION_ALIAS_RULE,
  readWithRetry,
  requireOrganization,
  timestampToMillis,
  type FieldViolation,
  type Handlers,
  type ServiceRegistration,
} from '@mileage/runtime';
import { OrganizationsRepository, resolveScimToken, ScimTokensRepository } from './organizations-repo';
import { inCallOrganization, type UsersServerDeps } from './organization-context';
import { UsersRepository } from './users-repo';
import { requireUserId, textViolations } from './validation';

/** The actor of the trail's entry for a change of the organization admin role: an operator's act (npm run org). */
export const OPERATOR_ACTOR = 'operator';
const MAX_TOKEN_NAME = 100;

function refuse(violations: FieldViolation[], what: string): void {
  if (violations.length) throw errors.invalidArgument(`invalid ${what}`, violations);
}

/** The OrganizationsService handlers (users.proto): organizations, their admins, their SCIM secret tokens. */
export function organizationsRegistration(deps: UsersServerDeps): ServiceRegistration {
  const organizations = new OrganizationsRepository(deps.knex);
  const read = { read: true };

  const handlers: Handlers<usersV1.OrganizationsServiceServer> = {
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
      const user = await inCallOrganization(deps, ctx, (trx, organizationId) =>
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

    async createScimToken(request, ctx) {
      const name = request.name.trim();
      const violations = [
        ...textViolations('name', name, true, MAX_TOKEN_NAME),
        ...textViolations('actor', request.actor, true),
      ];
      const expiresAt = request.expireTime && new Date(timestampToMillis(request.expireTime));
      if (expiresAt && !(expiresAt.getTime() > Date.now()))
        violations.push({ field: 'expire_time', description: 'must be in the future' });
      refuse(violations, 'SCIM token');
      return inCallOrganization(deps, ctx, (trx, organizationId) =>
        new ScimTokensRepository(trx, organizationId).create(
          { name, ...(expiresAt ? { expiresAt } : {}) },
          { actor: request.actor, requestId: request.requestId },
          ctx.trace,
        ),
      );
    },

    async listScimTokens(_request, ctx) {
      const tokens = await inCallOrganization(
        deps,
        ctx,
        (trx, organizationId) => new ScimTokensRepository(trx, organizationId).listActive(ctx.trace),
        read,
      );
      return { tokens };
    },

    async revokeScimToken(request, ctx) {
      requireOrganization(ctx);
      refuse(textViolations('actor', request.actor, true), 'revocation');
      // A malformed id names no token, like an unknown one.
      const token =
        isUuid(request.id) &&
        (await inCallOrganization(deps, ctx, (trx, organizationId) =>
          new ScimTokensRepository(trx, organizationId).revoke(
            request.id,
            { actor: request.actor, requestId: request.requestId },
            ctx.trace,
          ),
        ));
      if (!token) throw errors.notFound('SCIM token not found', 'SCIM_TOKEN_NOT_FOUND');
      return { token };
    },

    async resolveScimToken(request, ctx) {
      if (request.secretSha256.length !== 32)
        throw errors.invalidArgument('secret_sha256 must be 32 bytes', [
          { field: 'secret_sha256', description: 'a SHA-256 (32 bytes)' },
        ]);
      // Across organizations: the token is how the gateway learns the organization of a SCIM request. Run again on a
      // dropped connection like a read: its one write (the last-used stamp) is idempotent.
      const token = await readWithRetry(
        () => acrossOrganizations(deps.knex, (trx) => resolveScimToken(trx, request.secretSha256, ctx.trace)),
        droppedReadAttempts(deps.knex),
      );
      if (!token) throw errors.notFound('SCIM token not found', 'SCIM_TOKEN_NOT_FOUND');
      return { token };
    },
  };

  return {
    definition: usersV1.OrganizationsServiceService,
    handlers: handlers as ServiceRegistration['handlers'],
  };
}
