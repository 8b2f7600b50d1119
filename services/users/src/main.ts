// The process of the Users service: everything but its own parts comes from runService.
import { PROTO_FILES } from '@mileage/proto';
import { outboxRelayConfigShape, outboxRelayTasks, webhooksClientSpec } from '@mileage/runtime/outbox';
import { runService } from '@mileage/runtime/service';
import { openDatabase } from './database';
import { createServer } from './server';

void runService({
  name: 'users',
  defaults: { grpcPort: 50051, metricsPort: 9461 },
  protoFile: PROTO_FILES.users,
  openDatabase,
  config: outboxRelayConfigShape,
  // The Webhooks service, to which the outbox relay hands the events (none when WEBHOOKS_ADDRESS is unset).
  clients: webhooksClientSpec,
  createServer,
  tasks: outboxRelayTasks,
});
