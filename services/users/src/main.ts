// The process of the Users service: everything but its own parts comes from runService.
import { PROTO_FILES } from '@mileage/proto';
import { env } from '@mileage/runtime/config';
import { outboxRelayConfigShape, outboxRelayTasks, webhooksClientSpec } from '@mileage/runtime/outbox';
import { runService } from '@mileage/runtime/service';
import { openDatabase } from './database';
import { DEFAULT_BACKUPS_HOLD_DAYS } from './offboarding-repo';
import { createServer } from './server';

void runService({
  name: 'users',
  defaults: { grpcPort: 50051, metricsPort: 9461 },
  protoFile: PROTO_FILES.users,
  openDatabase,
  config: {
    ...outboxRelayConfigShape,
    /** Days after an erasure until no backup holds the data: the erasure receipt's date (docs/operations.md). */
    ERASURE_BACKUPS_HOLD_DAYS: env.positiveInt(DEFAULT_BACKUPS_HOLD_DAYS),
  },
  // The Webhooks service, to which the outbox relay hands the events (none when WEBHOOKS_ADDRESS is unset).
  clients: webhooksClientSpec,
  createServer: (context) =>
    createServer({ knex: context.knex, erasureBackupsHoldDays: context.config.ERASURE_BACKUPS_HOLD_DAYS }),
  tasks: outboxRelayTasks,
});
