import type { webhooksV1 } from '@mileage/proto';
import { eraseOrganizationHandler } from '@mileage/runtime/database';
import { type Handlers, requireOrganization } from '@mileage/runtime/grpc';
import { ERASURE_PLAN } from './erasure-plan';
import type { WebhooksServerDeps } from './webhooks-deps';

/**
 * Offboarding (docs/operations.md, "Data lifecycle"): the suspension's pause of the organization's deliveries, and
 * the erasure of this service's rows of it.
 */
export function erasureHandlers(
  deps: WebhooksServerDeps,
): Pick<Handlers<webhooksV1.WebhooksServiceServer>, 'eraseOrganization' | 'setDeliveriesPaused'> {
  return {
    eraseOrganization: eraseOrganizationHandler(deps.repo.knex, ERASURE_PLAN),
    async setDeliveriesPaused(request, ctx) {
      await deps.repo.setPaused(requireOrganization(ctx), request.paused);
      return {};
    },
  };
}
