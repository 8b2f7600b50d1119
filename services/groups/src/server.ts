import { groupsV1 } from '@mileage/proto';
import type { Handlers, ServiceRegistration } from '@mileage/runtime/grpc';
import { exportHandlers } from './export-handlers';
import { groupHandlers } from './groups-handlers';
import { memberHandlers } from './members-handlers';
import { callOrganization, type GroupsServerDeps } from './organization-context';
import { erasureHandlers } from './erasure-handlers';

export type { GroupsServerDeps };

/** The GroupsService over the given database: each resource's handlers wired; process wiring lives in main.ts. */
export function createServer(deps: GroupsServerDeps): ServiceRegistration {
  const organization = callOrganization(deps);
  const handlers: Handlers<groupsV1.GroupsServiceServer> = {
    ...groupHandlers(organization, deps),
    ...memberHandlers(organization),
    ...erasureHandlers(deps),
    ...exportHandlers(deps),
  };
  return { definition: groupsV1.GroupsServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}
