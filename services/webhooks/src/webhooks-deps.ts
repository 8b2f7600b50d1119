import type { groupsV1 } from '@mileage/proto';
import type { Knex } from '@mileage/runtime/database';
import type { ArchiveStore } from '@mileage/runtime/storage';
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
  /** Its database and the archive store, for its part of an organization export; without them exports are off. */
  knex?: Knex;
  archives?: ArchiveStore;
}
