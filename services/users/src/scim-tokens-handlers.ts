import type { usersV1 } from '@mileage/proto';
import { acrossOrganizations, droppedReadAttempts, readWithRetry } from '@mileage/runtime/database';
import { errors, type Handlers, requireOrganization } from '@mileage/runtime/grpc';
import { isUuid, timestampToMillis } from '@mileage/runtime/formats';
import { inCallOrganization, type UsersServerDeps } from './organization-context';
import { resolveScimToken, ScimTokensRepository } from './organizations-repo';
import { refuse, textViolations } from './validation';

const MAX_TOKEN_NAME = 100;

export type ScimTokenHandlers = Pick<
  Handlers<usersV1.OrganizationsServiceServer>,
  'createScimToken' | 'listScimTokens' | 'revokeScimToken' | 'resolveScimToken'
>;

/** The OrganizationsService's SCIM secret tokens (users.proto): issued, listed and revoked per organization. */
export function scimTokenHandlers(deps: UsersServerDeps): ScimTokenHandlers {
  const read = { read: true };

  return {
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
}
