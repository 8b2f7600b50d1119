import { tracing } from './instrument';
import { createLogger, handleShutdown, loadConfigOrExit, Metrics, startGrpcServer } from '@mileage/runtime';
import { PROTO_FILES } from '@mileage/proto';
import { configSchema } from './config';
import { openDatabase } from './database';
import { createServer } from './server';

async function main(): Promise<void> {
  const config = loadConfigOrExit(configSchema);
  const logger = createLogger({ service: 'users', level: config.LOG_LEVEL });
  const metrics = new Metrics('users');
  const db = openDatabase({
    url: config.DATABASE_URL,
    poolMax: config.DATABASE_POOL_MAX,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    metrics,
  });
  if (config.MIGRATE_ON_START) {
    const { applied } = await db.migrate();
    logger.info({ applied }, 'migrations applied');
  }
  const grpcServer = await startGrpcServer({
    address: config.GRPC_ADDRESS,
    services: [createServer({ knex: db.knex })],
    protoFiles: [PROTO_FILES.users],
    logger,
    metrics,
  });
  const metricsServer = await metrics.listen(config.METRICS_PORT, config.METRICS_HOST);
  handleShutdown(
    logger,
    [
      { name: 'grpc', run: () => grpcServer.shutdown(config.SHUTDOWN_TIMEOUT_MS - 1_000) },
      { name: 'database', run: () => db.close() },
      { name: 'metrics', run: () => new Promise((resolve) => metricsServer.close(resolve)) },
      { name: 'tracing', run: () => tracing.shutdown() },
    ],
    config.SHUTDOWN_TIMEOUT_MS,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`users: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
