import { scimV1 } from '@mileage/proto';
import type { ServiceRegistration } from '@mileage/runtime/grpc';
import { actorAttestation } from './attested-actor';
import type { ScimDeps } from './context';
import { requestHandlers } from './requests-handlers';
import { scimRoutes } from './routes';

export { SCIM_CONTENT_TYPE } from './requests-handlers';

/** The SCIM 2.0 protocol layer behind /scim/v2; the gateway authenticates and forwards, this decides. */
export function createServer(deps: ScimDeps): ServiceRegistration {
  const handlers = requestHandlers({
    attestedActor: actorAttestation(deps),
    dispatch: scimRoutes(deps),
    logger: deps.logger,
  });
  return { definition: scimV1.ScimServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}
