import { tracing } from './instrument';
import { PROTO_FILES } from '@mileage/proto';
import { runService } from '@mileage/runtime';
import { openDatabase } from './database';
import { createServer } from './server';

runService({
  name: 'groups',
  tracing,
  defaults: { grpcPort: 50052, metricsPort: 9462 },
  protoFile: PROTO_FILES.groups,
  openDatabase,
  createServer,
}).catch((err: unknown) => {
  process.stderr.write(`groups: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
