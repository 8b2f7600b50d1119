import type { groupsV1 } from '@mileage/proto';
import type { Logger } from '@mileage/runtime/telemetry';
import type { PromiseClient } from '@mileage/runtime/grpc';
import type { WebhooksRepository } from './repo';
import type { SecretBox } from './secrets';
import type { Resolver, TargetPolicy } from './targets';
import type { DeliveryWorker } from './worker';

/** What the WebhooksService's handlers take. */
export interface WebhooksServerDeps {
  repo: WebhooksRepository;
  secrets: SecretBox;
  policy: TargetPolicy;
  resolver: Resolver;
  /** To find a user's groups (user.deactivated carries none), inside the event's organization. */
  groups: PromiseClient<groupsV1.GroupsServiceClient>;
  worker?: Pick<DeliveryWorker, 'wake'>;
  logger?: Logger;
}
