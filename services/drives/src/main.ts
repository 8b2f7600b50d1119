// The process of the Drives service: everything but its own parts comes from runService.
import { PROTO_FILES } from '@mileage/proto';
import { outboxRelayConfigShape, outboxRelayTasks, runService, webhooksClientSpec } from '@mileage/runtime';
import { openDatabase } from './database';
import { createServer } from './server';

void runService({
  name: 'drives',
  defaults: { grpcPort: 50053, metricsPort: 9463 },
  protoFile: PROTO_FILES.drives,
  openDatabase,
  config: outboxRelayConfigShape,
  // The Webhooks service, to which the outbox relay hands the events (none when WEBHOOKS_ADDRESS is unset).
  clients: webhooksClientSpec,
  createServer,
  tasks: outboxRelayTasks,
});
