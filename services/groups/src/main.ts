// The process of the Groups service: everything but its own parts comes from runService.
import { PROTO_FILES } from '@mileage/proto';
import { runService } from '@mileage/runtime/service';
import { openDatabase } from './database';
import { createServer } from './server';

void runService({
  name: 'groups',
  defaults: { grpcPort: 50052, metricsPort: 9462 },
  protoFile: PROTO_FILES.groups,
  openDatabase,
  createServer,
});
