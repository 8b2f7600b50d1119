import { tracing } from './instrument';
import { PROTO_FILES } from '@mileage/proto';
import { runService } from '@mileage/runtime';
import { openDatabase } from './database';
import { createServer } from './server';

runService({
  name: 'users',
  tracing,
  defaults: { grpcPort: 50051, metricsPort: 9461 },
  protoFile: PROTO_FILES.users,
  openDatabase,
  createServer,
}).catch((err: unknown) => {
  process.stderr.write(`users: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
