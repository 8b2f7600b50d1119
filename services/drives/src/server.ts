import { drivesV1 } from '@mileage/proto';
import type { Handlers, ServiceRegistration } from '@mileage/runtime/grpc';
import { driveHandlers } from './drives-handlers';
import { exportHandlers } from './export-handlers';
import { callOrganization, type DrivesServerDeps } from './organization-context';
import { reportedDriveHandlers } from './reported-drives-handlers';
import { erasureHandlers } from './erasure-handlers';

export type { DrivesServerDeps };

/** The DrivesService over the given database: each resource's handlers wired; process wiring lives in main.ts. */
export function createServer(deps: DrivesServerDeps): ServiceRegistration {
  const organization = callOrganization(deps);
  const handlers: Handlers<drivesV1.DrivesServiceServer> = {
    ...driveHandlers(organization),
    ...exportHandlers(organization, deps),
    ...reportedDriveHandlers(organization, deps),
    ...erasureHandlers(deps),
  };
  return { definition: drivesV1.DrivesServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}
