import type { groupsV1 } from '@mileage/proto';
import { eraseOrganizationHandler } from '@mileage/runtime/database';
import type { Handlers } from '@mileage/runtime/grpc';
import { ERASURE_PLAN } from './erasure-plan';
import type { GroupsServerDeps } from './organization-context';

/** Offboarding's erasure of this service's rows of an organization (docs/operations.md, "Data lifecycle"). */
export function erasureHandlers(
  deps: GroupsServerDeps,
): Pick<Handlers<groupsV1.GroupsServiceServer>, 'eraseOrganization'> {
  return { eraseOrganization: eraseOrganizationHandler(deps.knex, ERASURE_PLAN) };
}
