import type { drivesV1 } from '@mileage/proto';
import { eraseOrganizationHandler } from '@mileage/runtime/database';
import type { Handlers } from '@mileage/runtime/grpc';
import { ERASURE_PLAN } from './erasure-plan';
import type { DrivesServerDeps } from './organization-context';

/** Offboarding's erasure of this service's rows of an organization (docs/operations.md, "Data lifecycle"). */
export function erasureHandlers(
  deps: DrivesServerDeps,
): Pick<Handlers<drivesV1.DrivesServiceServer>, 'eraseOrganization'> {
  return { eraseOrganization: eraseOrganizationHandler(deps.knex, ERASURE_PLAN) };
}
