import { webhooksV1 } from '@mileage/proto';
import type { Handlers, ServiceRegistration } from '@mileage/runtime/grpc';
import { deliveryHandlers } from './deliveries-handlers';
import { eventHandlers } from './events-handlers';
import { exportHandlers } from './export-handlers';
import { subscriptionHandlers } from './subscriptions-handlers';
import type { WebhooksServerDeps } from './webhooks-deps';
import { erasureHandlers } from './erasure-handlers';

export type { WebhooksServerDeps };

/**
 * The WebhooksService: each resource's handlers wired; process wiring lives in main.ts. A client's call acts inside
 * the organization it carries: a subscription of another organization is the same NOT_FOUND as one that does not exist.
 */
export function createServer(deps: WebhooksServerDeps): ServiceRegistration {
  const handlers: Handlers<webhooksV1.WebhooksServiceServer> = {
    ...subscriptionHandlers(deps),
    ...deliveryHandlers(deps),
    ...eventHandlers(deps),
    ...erasureHandlers(deps),
    ...exportHandlers(deps),
  };
  return { definition: webhooksV1.WebhooksServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}
