// The process of the Webhooks service: everything but its own parts comes from runService.
import { groupsV1, PROTO_FILES } from '@mileage/proto';
import { runService } from '@mileage/runtime/service';
import { configShape } from './config';
import { openDatabase } from './database';
import { webhooksDependencies, webhooksTasks } from './wiring';
import { createServer } from './server';

void runService({
  name: 'webhooks',
  defaults: { grpcPort: 50055, metricsPort: 9465 },
  protoFile: PROTO_FILES.webhooks,
  openDatabase,
  config: configShape,
  clients: (config) => ({
    groups: {
      client: groupsV1.GroupsServiceClient,
      address: config.GROUPS_ADDRESS,
      deadlineMs: config.GRPC_DEADLINE_MS,
    },
  }),
  dependencies: webhooksDependencies,
  createServer,
  tasks: webhooksTasks,
});
