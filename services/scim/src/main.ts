import { tracing } from './instrument';
import { groupsV1, PROTO_FILES, usersV1 } from '@mileage/proto';
import {
  createGrpcClient,
  createLogger,
  env,
  handleShutdown,
  loadConfigOrExit,
  Metrics,
  serviceConfigSchema,
  startGrpcServer,
} from '@mileage/runtime';
import { z } from 'zod';
import { openDatabase } from './database';
import { createServer } from './server';

const configSchema = serviceConfigSchema({ grpcPort: 50054, metricsPort: 9464 }).extend({
  USERS_ADDRESS: env.address('127.0.0.1:50051'),
  GROUPS_ADDRESS: env.address('127.0.0.1:50052'),
  /** Public URL of /scim/v2 as clients reach it (meta.location, Location headers). */
  SCIM_BASE_URL: z
    .url()
    .default('http://127.0.0.1:8080/scim/v2')
    .transform((u) => u.replace(/\/$/, '')),
  GRPC_DEADLINE_MS: env.positiveInt(3_000),
});

async function main(): Promise<void> {
  const config = loadConfigOrExit(configSchema);
  const logger = createLogger({ service: 'scim', level: config.LOG_LEVEL });
  const metrics = new Metrics('scim');
  const db = openDatabase({
    url: config.DATABASE_URL,
    poolMax: config.DATABASE_POOL_MAX,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    metrics,
  });
  if (config.MIGRATE_ON_START) logger.info({ applied: (await db.migrate()).applied }, 'migrations applied');
  const users = createGrpcClient(usersV1.UsersServiceClient, config.USERS_ADDRESS, {
    defaultDeadlineMs: config.GRPC_DEADLINE_MS,
    metrics,
  });
  const groups = createGrpcClient(groupsV1.GroupsServiceClient, config.GROUPS_ADDRESS, {
    defaultDeadlineMs: config.GRPC_DEADLINE_MS,
    metrics,
  });
  const grpcServer = await startGrpcServer({
    address: config.GRPC_ADDRESS,
    services: [createServer({ users, groups, logger, baseUrl: config.SCIM_BASE_URL })],
    protoFiles: [PROTO_FILES.scim],
    logger,
    metrics,
  });
  const metricsServer = await metrics.listen(config.METRICS_PORT, config.METRICS_HOST);

  handleShutdown(
    logger,
    [
      { name: 'grpc', run: () => grpcServer.shutdown(Math.max(1_000, config.SHUTDOWN_TIMEOUT_MS - 1_000)) },
      { name: 'clients', run: () => [users, groups].forEach((c) => c.close()) },
      { name: 'database', run: () => db.close() },
      { name: 'metrics', run: () => new Promise((resolve) => metricsServer.close(resolve)) },
      { name: 'tracing', run: () => tracing.shutdown() },
    ],
    config.SHUTDOWN_TIMEOUT_MS,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`scim: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
