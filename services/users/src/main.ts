// The process of the Users service: everything but its own parts comes from runService.
import { PROTO_FILES } from '@mileage/proto';
import { outboxRelayTasks, webhooksClientSpec } from '@mileage/runtime/outbox';
import { runService } from '@mileage/runtime/service';
import { LocalArchiveStore } from '@mileage/runtime/storage';
import { configShape } from './config';
import { openDatabase } from './database';
import { exportTasks } from './export-job';
import { createServer } from './server';

void runService({
  name: 'users',
  defaults: { grpcPort: 50051, metricsPort: 9461 },
  protoFile: PROTO_FILES.users,
  openDatabase,
  config: configShape,
  // The Webhooks service, to which the outbox relay hands the events (none when WEBHOOKS_ADDRESS is unset).
  clients: webhooksClientSpec,
  dependencies: (context) => ({
    ...context,
    ...(context.config.EXPORT_ARCHIVE_DIR
      ? { archives: new LocalArchiveStore(context.config.EXPORT_ARCHIVE_DIR) }
      : {}),
  }),
  createServer,
  tasks: (deps, config) => [
    ...outboxRelayTasks(deps, config),
    // Organization exports run in the Users process, which owns the organizations and their provisioning trail.
    ...(deps.archives
      ? exportTasks(
          { knex: deps.knex, store: deps.archives, logger: deps.logger, scimBaseUrl: config.SCIM_BASE_URL },
          config.EXPORT_POLL_MS,
        )
      : []),
  ],
});
