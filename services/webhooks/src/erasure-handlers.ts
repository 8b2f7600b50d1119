import type { webhooksV1 } from '@mileage/proto';
import { eraseOrganizationHandler } from '@mileage/runtime/database';
import type { Handlers } from '@mileage/runtime/grpc';
import { ERASURE_PLAN } from './erasure-plan';
import type { WebhooksServerDeps } from './webhooks-deps';

/** Offboarding's erasure of this service's rows of an organization (docs/operations.md, "Data lifecycle"). */
export function erasureHandlers(
  deps: WebhooksServerDeps,
): Pick<Handlers<webhooksV1.WebhooksServiceServer>, 'eraseOrganization'> {
  return { eraseOrganization: eraseOrganizationHandler(deps.repo.knex, ERASURE_PLAN) };
}
