import { tracing } from './instrument';
import { PROTO_FILES } from '@mileage/proto';
import { runService } from '@mileage/runtime';
import { openDatabase } from './database';
import { createServer } from './server';

runService({
  name: 'drives',
  tracing,
  defaults: { grpcPort: 50053, metricsPort: 9463 },
  protoFile: PROTO_FILES.drives,
  openDatabase,
  createServer,
}).catch((err: unknown) => {
  process.stderr.write(`drives: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
