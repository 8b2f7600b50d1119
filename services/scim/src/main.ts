// The process of the SCIM service: everything but its own parts comes from runService. It has no database: a
// protocol layer over the owners of the data (Users, Groups), whose health alone decides which calls it can serve.
import { groupsV1, PROTO_FILES, usersV1 } from '@mileage/proto';
import { runService } from '@mileage/runtime/service';
import { configShape } from './config';
import { createServer } from './server';

void runService({
  name: 'scim',
  defaults: { grpcPort: 50054, metricsPort: 9464 },
  protoFile: PROTO_FILES.scim,
  config: configShape,
  clients: (config) => ({
    users: { client: usersV1.UsersServiceClient, address: config.USERS_ADDRESS, deadlineMs: config.GRPC_DEADLINE_MS },
    groups: {
      client: groupsV1.GroupsServiceClient,
      address: config.GROUPS_ADDRESS,
      deadlineMs: config.GRPC_DEADLINE_MS,
    },
  }),
  dependencies: ({ config, logger, metrics, clients }) => ({
    ...clients,
    logger,
    metrics,
    baseUrl: config.SCIM_BASE_URL,
    attestation: {
      secrets: [config.ACTOR_ATTESTATION_SECRET, config.ACTOR_ATTESTATION_PREVIOUS_SECRET].filter(
        (s): s is string => s !== undefined,
      ),
      maxAgeSeconds: config.ACTOR_ATTESTATION_MAX_AGE_SECONDS,
      replayCacheEntries: config.ACTOR_ATTESTATION_REPLAY_CACHE_ENTRIES,
    },
  }),
  createServer,
});
