import { z } from 'zod';
import { commonConfigSchema, env, loadConfigOrExit } from './config';
import type { Database, Metrics as MetricsType } from './index';
import { databaseCheck, DependencyMonitor, whileDatabaseDown } from './dependencies';
import { startGrpcServer, type ServiceRegistration } from './grpc-server';
import { createLogger } from './logger';
import { Metrics } from './metrics';
import { handleShutdown } from './shutdown';
import type { Tracing } from './tracing';
import type { Knex } from 'knex';

const postgresUrl = () => z.string().regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL');

/** The configuration every gRPC service reads (each with its own default ports). */
export function serviceConfigSchema(defaults: { grpcPort: number; metricsPort: number }) {
  return commonConfigSchema.extend({
    DATABASE_URL: postgresUrl(),
    DATABASE_POOL_MAX: env.positiveInt(10),
    DATABASE_STATEMENT_TIMEOUT_MS: env.positiveInt(5_000),
    GRPC_ADDRESS: env.address(`127.0.0.1:${defaults.grpcPort}`),
    METRICS_PORT: env.port(defaults.metricsPort),
    MIGRATE_ON_START: env.boolean(false),
    /** Connections older than this are closed (GOAWAY), so callers re-resolve and reach new replicas. */
    GRPC_MAX_CONNECTION_AGE_MS: env.positiveInt(30_000),
    /** Time calls in flight on such a connection may still take: at least the callers' longest deadline. */
    GRPC_MAX_CONNECTION_AGE_GRACE_MS: env.positiveInt(15_000),
  });
}

/** The gRPC server options every service derives from its configuration. */
export function connectionAge(config: {
  GRPC_MAX_CONNECTION_AGE_MS: number;
  GRPC_MAX_CONNECTION_AGE_GRACE_MS: number;
}): { maxConnectionAgeMs: number; maxConnectionAgeGraceMs: number } {
  return {
    maxConnectionAgeMs: config.GRPC_MAX_CONNECTION_AGE_MS,
    maxConnectionAgeGraceMs: config.GRPC_MAX_CONNECTION_AGE_GRACE_MS,
  };
}

export interface ServiceDefinition {
  name: string;
  tracing: Tracing;
  defaults: { grpcPort: number; metricsPort: number };
  protoFile: string;
  openDatabase(options: {
    url: string;
    poolMax?: number;
    statementTimeoutMs?: number;
    metrics?: MetricsType;
  }): Database;
  createServer(deps: { knex: Knex }): ServiceRegistration;
  /** Periodic upkeep of the service's own tables (each replica runs it; it must be safe to run concurrently). */
  housekeeping?: { everyMs: number; run(knex: Knex): Promise<unknown> };
}

/**
 * The process wiring of a gRPC service: configuration (fail fast), logger, metrics, database pool,
 * optional migrations, the gRPC server with health and reflection, /metrics, and graceful shutdown.
 */
export async function runService(service: ServiceDefinition): Promise<void> {
  const config = loadConfigOrExit(serviceConfigSchema(service.defaults));
  const logger = createLogger({ service: service.name, level: config.LOG_LEVEL });
  const metrics = new Metrics(service.name);
  const db = service.openDatabase({
    url: config.DATABASE_URL,
    poolMax: config.DATABASE_POOL_MAX,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    metrics,
  });
  if (config.MIGRATE_ON_START) {
    const { applied } = await db.migrate();
    logger.info({ applied }, 'migrations applied');
  }
  // PostgreSQL down: calls fail fast with UNAVAILABLE and the service reports NOT_SERVING to its callers, but the
  // process stays ready and live (it recovers by itself when the database is back).
  const dependencies = new DependencyMonitor({
    checks: [databaseCheck(db.knex)],
    metrics,
    logger,
    onChange: (_name, up) => grpcServer.setServing(up),
  });
  const grpcServer = await startGrpcServer({
    address: config.GRPC_ADDRESS,
    services: [service.createServer({ knex: db.knex })],
    protoFiles: [service.protoFile],
    logger,
    metrics,
    ...connectionAge(config),
    failFast: whileDatabaseDown(dependencies),
  });
  dependencies.start();
  const metricsServer = await metrics.listen(config.METRICS_PORT, config.METRICS_HOST, {
    '/healthz/dependencies': () => dependencies.report(),
  });
  let upkeep: Promise<unknown> = Promise.resolve();
  const housekeeping = service.housekeeping;
  const timer = housekeeping
    ? setInterval(() => {
        upkeep = housekeeping.run(db.knex).catch((err: unknown) => logger.warn({ err }, 'housekeeping failed'));
      }, housekeeping.everyMs)
    : undefined;
  timer?.unref();
  handleShutdown(
    logger,
    [
      { name: 'grpc', run: () => grpcServer.shutdown(Math.max(1_000, config.SHUTDOWN_TIMEOUT_MS - 1_000)) },
      {
        name: 'housekeeping',
        run: async () => {
          clearInterval(timer);
          await upkeep;
        },
      },
      { name: 'dependencies', run: () => dependencies.stop() },
      { name: 'database', run: () => db.close() },
      { name: 'metrics', run: () => new Promise((resolve) => metricsServer.close(resolve)) },
      { name: 'tracing', run: () => service.tracing.shutdown() },
    ],
    config.SHUTDOWN_TIMEOUT_MS,
  );
}

/** `npm run migrate -w <service>`: applies the service's migrations to DATABASE_URL and exits. */
export async function runMigrations(name: string, openDatabase: ServiceDefinition['openDatabase']): Promise<void> {
  // Two connections at most: the migration lock and the migration (counted in the chart's connection budget).
  const config = loadConfigOrExit(z.object({ DATABASE_URL: postgresUrl(), DATABASE_POOL_MAX: env.positiveInt(2) }));
  const logger = createLogger({ service: `${name}-migrate` });
  const db = openDatabase({ url: config.DATABASE_URL, poolMax: config.DATABASE_POOL_MAX });
  try {
    const { applied } = await db.migrate();
    logger.info({ applied }, applied.length ? 'migrations applied' : 'schema up to date');
  } catch (err) {
    logger.error({ err }, 'migration failed');
    process.exitCode = 1;
  } finally {
    await db.close();
  }
}
