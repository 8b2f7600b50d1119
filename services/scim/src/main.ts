// The process of the SCIM service: everything but its own parts comes from runService.
import { groupsV1, PROTO_FILES, usersV1 } from '@mileage/proto';
import { runService } from '@mileage/runtime';
import { configShape } from './config';
import { openDatabase } from './database';
import { createJournal } from './journal';
import { createServer } from './server';

void runService({
  name: 'scim',
  defaults: { grpcPort: 50054, metricsPort: 9464 },
  protoFile: PROTO_FILES.scim,
  openDatabase,
  config: configShape,
  clients: (config) => ({
    users: { client: usersV1.UsersServiceClient, address: config.USERS_ADDRESS, deadlineMs: config.GRPC_DEADLINE_MS },
    groups: {
      client: groupsV1.GroupsServiceClient,
      address: config.GROUPS_ADDRESS,
      deadlineMs: config.GRPC_DEADLINE_MS,
    },
  }),
  dependencies: ({ config, knex, logger, clients }) => ({
    ...clients,
    logger,
    baseUrl: config.SCIM_BASE_URL,
    journal: createJournal({
      knex,
      ...clients,
      logger,
      options: { recoveryAfterMs: config.SCIM_RECOVERY_AFTER_MS },
    }),
  }),
  createServer,
  // Settles writes left unsettled by a crash or an unknown outcome (see WriteJournal).
  tasks: ({ journal }, config) => [
    {
      name: 'recovery of pending writes',
      everyMs: Math.max(1_000, config.SCIM_RECOVERY_AFTER_MS / 2),
      run: () => journal.recover(config.SCIM_RECOVERY_AFTER_MS),
    },
  ],
});
