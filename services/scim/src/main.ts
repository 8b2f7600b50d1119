import { tracing } from './instrument';
import { groupsV1, PROTO_FILES, usersV1 } from '@mileage/proto';
import {
  connectionAge,
  createGrpcClient,
  createLogger,
  databaseCheck,
  DependencyMonitor,
  env,
  grpcHealthCheck,
  HealthClient,
  handleShutdown,
  loadConfigOrExit,
  Metrics,
  serviceConfigSchema,
  startGrpcServer,
  whileDatabaseDown,
} from '@mileage/runtime';
import { z } from 'zod';
import { openDatabase } from './database';
import { createJournal } from './journal';
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
  /** How old an unsettled write must be before recovery asks its owner about it; longer than any deadline. */
  SCIM_RECOVERY_AFTER_MS: env.positiveInt(30_000),
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
  const journal = createJournal({
    knex: db.knex,
    users,
    groups,
    logger,
    options: { recoveryAfterMs: config.SCIM_RECOVERY_AFTER_MS },
  });
  // Reported (metrics, /healthz/dependencies); only PostgreSQL down makes calls fail fast. Never readiness.
  const health = [new HealthClient(config.USERS_ADDRESS), new HealthClient(config.GROUPS_ADDRESS)];
  const dependencies = new DependencyMonitor({
    checks: [
      databaseCheck(db.knex),
      grpcHealthCheck('users', health[0]!, 'mileage.users.v1.UsersService'),
      grpcHealthCheck('groups', health[1]!, 'mileage.groups.v1.GroupsService'),
    ],
    metrics,
    logger,
    onChange: (name, up) => name === 'postgres' && grpcServer.setServing(up),
  });
  const grpcServer = await startGrpcServer({
    address: config.GRPC_ADDRESS,
    services: [createServer({ users, groups, logger, baseUrl: config.SCIM_BASE_URL, journal })],
    protoFiles: [PROTO_FILES.scim],
    logger,
    metrics,
    ...connectionAge(config),
    failFast: whileDatabaseDown(dependencies),
  });
  dependencies.start();
  const metricsServer = await metrics.listen(config.METRICS_PORT, config.METRICS_HOST, {
    '/healthz/dependencies': () => dependencies.report(),
  });

  // Settles writes left unsettled by a crash or an unknown outcome (see WriteJournal).
  let recovering: Promise<unknown> = Promise.resolve();
  const recovery = setInterval(
    () => {
      recovering = journal
        .recover(config.SCIM_RECOVERY_AFTER_MS)
        .catch((err: unknown) => logger.warn({ err }, 'recovery of pending writes failed'));
    },
    Math.max(1_000, config.SCIM_RECOVERY_AFTER_MS / 2),
  );
  recovery.unref();

  handleShutdown(
    logger,
    [
      { name: 'grpc', run: () => grpcServer.shutdown(Math.max(1_000, config.SHUTDOWN_TIMEOUT_MS - 1_000)) },
      {
        name: 'recovery',
        run: async () => {
          clearInterval(recovery);
          await recovering;
        },
      },
      { name: 'dependencies', run: () => dependencies.stop() },
      { name: 'clients', run: () => [users, groups, ...health].forEach((c) => c.close()) },
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
