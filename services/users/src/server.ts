import { usersV1 } from '@mileage/proto';
import { ORGANIZATIONS_SERVICE, type Handlers, type ServiceRegistration } from '@mileage/runtime/grpc';
import { exportHandlers } from './exports-handlers';
import { offboardingHandlers } from './offboarding-handlers';
import { organizationHandlers } from './organizations-handlers';
import type { UsersServerDeps } from './organization-context';
import { scimTokenHandlers } from './scim-tokens-handlers';
import { userHandlers } from './users-handlers';

export type { UsersServerDeps };

/**
 * The gRPC services of the Users process over the given database: UsersService and OrganizationsService (an
 * organization owns its users; both are asked about on every request), each resource's handlers wired. Process
 * wiring lives in main.ts.
 */
export function createServer(deps: UsersServerDeps): ServiceRegistration[] {
  const organizations: Handlers<usersV1.OrganizationsServiceServer> = {
    ...organizationHandlers(deps),
    ...scimTokenHandlers(deps),
    ...offboardingHandlers(deps),
    ...exportHandlers(deps),
  };
  return [
    { definition: usersV1.UsersServiceService, handlers: userHandlers(deps) as ServiceRegistration['handlers'] },
    { definition: ORGANIZATIONS_SERVICE, handlers: organizations as ServiceRegistration['handlers'] },
  ];
}
