import type * as grpc from '@grpc/grpc-js';
import * as path from 'node:path';
import { z } from 'zod';
import { circuitBreakerConfig, commonConfigSchema, env, loadConfigOrExit } from '../config/config';
import { createDatabase, databaseUser, MIGRATION_PHASES, type Database, type Knex } from '../database/db';
import { databaseCheck, DependencyMonitor, grpcHealthCheck, whileDatabaseDown } from './dependencies';
import {
  createGrpcClient,
  grpcServiceName,
  HealthClient,
  LONGEST_CALL_DEADLINE_MS,
  type GeneratedClientConstructor,
  type PromiseClient,
} from '../grpc/grpc-client';
import { startGrpcServer, type ServiceRegistration } from '../grpc/grpc-server';
import { checkGrpcTls, grpcTlsConfigShape, type GrpcTlsConfig } from '../grpc/grpc-tls';
import { createLogger, type Logger } from '../telemetry/logger';
import type { Metrics } from '../telemetry/metrics';
import { runProcess, type ProcessContext, type StartedProcess } from './process';
import { roleBypassingPolicies } from '../database/tenancy';

const postgresUrl = () => z.string().regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL');

/** The configuration every gRPC service reads (each with its own default ports). */
export function serviceConfigSchema(defaults: { grpcPort: number; metricsPort: number }) {
  return commonConfigSchema.extend({
    GRPC_ADDRESS: env.address(`127.0.0.1:${defaults.grpcPort}`),
    METRICS_PORT: env.port(defaults.metricsPort),
    /** Connections older than this are closed (GOAWAY), so callers re-resolve and reach new replicas. */
    GRPC_MAX_CONNECTION_AGE_MS: env.positiveInt(30_000),
    /** Time calls in flight on such a connection may still take: at least the longest deadline a call may have. */
    GRPC_MAX_CONNECTION_AGE_GRACE_MS: env.positiveInt(LONGEST_CALL_DEADLINE_MS),
    /** Serve gRPC server reflection (grpcurl, Postman); off unless asked for, as it describes every method. */
    GRPC_REFLECTION: env.boolean(false),
    ...grpcTlsConfigShape,
  });
}

/** The configuration of a service that has a database (`ServiceDefinition.openDatabase`), on top of every service's. */
export const databaseConfigShape = {
  /** The runtime role: DML on the service's tables only (the migrations grant it). */
  DATABASE_URL: postgresUrl(),
  /** The schema owner's URL: only with MIGRATE_ON_START (otherwise the migration Job / `migrate.js` uses it). */
  MIGRATION_DATABASE_URL: postgresUrl().optional(),
  /** The role the migrations grant DML to; default: the user of DATABASE_URL. */
  DATABASE_RUNTIME_ROLE: z.string().min(1).optional(),
  DATABASE_POOL_MAX: env.positiveInt(10),
  DATABASE_STATEMENT_TIMEOUT_MS: env.positiveInt(5_000),
  /**
   * The statement timeout of the reads that can be costly (SCIM lists and filters, drive pages): each of their
   * statements, so a list of two (count, page) stays within the callers' deadlines (gateway 2 s, SCIM service 3 s).
   */
  DATABASE_COSTLY_STATEMENT_TIMEOUT_MS: env.positiveInt(1_000),
  /** Connections of the pool one organization may hold at once (organization-share.ts); default half the pool. */
  DATABASE_ORGANIZATION_MAX_CONNECTIONS: z.coerce.number().int().positive().optional(),
  /** Connections kept for the work across organizations (callers' account reads, relays); default a quarter. */
  DATABASE_RESERVED_CONNECTIONS: z.coerce.number().int().min(0).optional(),
  /** How long work inside an organization waits for a place of its share before the 429. */
  DATABASE_ORGANIZATION_WAIT_MS: z.coerce.number().int().min(0).max(10_000).default(500),
  MIGRATE_ON_START: env.boolean(false),
};
type DatabaseConfig = z.infer<z.ZodObject<typeof databaseConfigShape>>;

/**
 * The checks of a service's configuration that span variables (zod's refinements; an object schema with them can no
 * longer be extended, so they are applied to the extended schema): with a database, the migration URL with
 * MIGRATE_ON_START and a runtime role to grant to; mutual TLS all or nothing.
 */
export function checkServiceConfig(
  c: Partial<DatabaseConfig> & GrpcTlsConfig & { GRPC_MAX_CONNECTION_AGE_GRACE_MS?: number },
  ctx: z.RefinementCtx,
): void {
  if (c.GRPC_MAX_CONNECTION_AGE_GRACE_MS !== undefined && c.GRPC_MAX_CONNECTION_AGE_GRACE_MS < LONGEST_CALL_DEADLINE_MS)
    ctx.addIssue({
      code: 'custom',
      path: ['GRPC_MAX_CONNECTION_AGE_GRACE_MS'],
      message: `must be at least ${LONGEST_CALL_DEADLINE_MS} (the longest deadline a call may have): a shorter grace cuts off calls still running on a connection closed for its age`,
    });
  if (c.MIGRATE_ON_START && !c.MIGRATION_DATABASE_URL)
    ctx.addIssue({
      code: 'custom',
      path: ['MIGRATION_DATABASE_URL'],
      message: "required with MIGRATE_ON_START: the schema owner's URL (DATABASE_URL is the runtime role's)",
    });
  if (c.DATABASE_URL !== undefined && !c.DATABASE_RUNTIME_ROLE && !databaseUser(c.DATABASE_URL))
    ctx.addIssue({
      code: 'custom',
      path: ['DATABASE_URL'],
      message: 'names no user: put the runtime role in the URL or set DATABASE_RUNTIME_ROLE',
    });
  if (
    c.DATABASE_POOL_MAX !== undefined &&
    c.DATABASE_RESERVED_CONNECTIONS !== undefined &&
    c.DATABASE_RESERVED_CONNECTIONS >= c.DATABASE_POOL_MAX
  )
    ctx.addIssue({
      code: 'custom',
      path: ['DATABASE_RESERVED_CONNECTIONS'],
      message: 'must be fewer than DATABASE_POOL_MAX: the rest is what organizations share',
    });
  checkGrpcTls(c, ctx);
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

/** A service's configuration: the common variables and its own (`ServiceDefinition.config`). */
export type ServiceConfig<Shape extends z.ZodRawShape = z.ZodRawShape> = z.infer<
  ReturnType<typeof serviceConfigSchema>
> &
  z.infer<z.ZodObject<Shape>>;

export type OpenDatabase = (options: {
  url: string;
  poolMax?: number;
  statementTimeoutMs?: number;
  costlyStatementTimeoutMs?: number;
  organizationShare?: { perOrganization?: number; reserved?: number; waitMs: number };
  metrics?: Metrics;
  logger?: Logger;
}) => Database;

/**
 * A service's database, derived from its name: the schema of that name, the login's `application_name`
 * `mileage-<name>`, the migrations in `migrations/` beside the calling module (pass `__dirname`), and the schema's
 * append-only tables (the runtime role may only INSERT and SELECT them).
 */
export function serviceDatabase(
  name: string,
  directory: string,
  extra: { appendOnlyTables?: string[] } = {},
): { SCHEMA: string; openDatabase: OpenDatabase } {
  return {
    SCHEMA: name,
    openDatabase: (options) =>
      createDatabase({
        url: options.url,
        schema: name,
        migrationsDirectory: path.join(directory, 'migrations'),
        contractMigrationsDirectory: path.join(directory, 'migrations', 'contract'),
        applicationName: `mileage-${name}`,
        appendOnlyTables: extra.appendOnlyTables ?? [],
        ...(options.poolMax ? { poolMax: options.poolMax } : {}),
        ...(options.statementTimeoutMs ? { statementTimeoutMs: options.statementTimeoutMs } : {}),
        ...(options.costlyStatementTimeoutMs ? { costlyStatementTimeoutMs: options.costlyStatementTimeoutMs } : {}),
        ...(options.organizationShare ? { organizationShare: options.organizationShare } : {}),
        ...(options.metrics ? { metrics: options.metrics } : {}),
        ...(options.logger ? { logger: options.logger } : {}),
      }),
  };
}

/** A client of another service: its generated class, where it listens, the deadline of every call. */
export interface ClientSpec<C extends grpc.Client = grpc.Client> {
  client: GeneratedClientConstructor<C>;
  address: string;
  deadlineMs: number;
  /** Its calls may outlive a connection's maximum age (createGrpcClient's `longCalls`): background work only. */
  longCalls?: boolean;
}

export type ConnectedClients<Specs> = {
  [K in keyof Specs]: Specs[K] extends ClientSpec<infer C> ? PromiseClient<C> : never;
};

/**
 * What runService has made for a service that has no database (the SCIM service: a protocol layer over the owners)
 * before its own dependencies: the makings of `createServer(deps)`.
 */
export interface StatelessServiceContext<Config = ServiceConfig, Clients = Record<string, never>> {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  /** The clients declared by `ServiceDefinition.clients`, closed at shutdown. */
  clients: Clients;
}

/** The same for a service with a database (`ServiceDefinition.openDatabase`): its pool too. */
export interface ServiceContext<
  Config = ServiceConfig,
  Clients = Record<string, never>,
> extends StatelessServiceContext<Config, Clients> {
  knex: Knex;
}

/** Periodic work of a service (each replica runs it; it must be safe to run concurrently). */
export interface BackgroundTask {
  name: string;
  everyMs: number;
  run(): Promise<unknown>;
  /** Ends the task's work at shutdown (a run that returns before its work ends must have it): resolves when done. */
  stop?(): Promise<unknown>;
}

export interface ServiceDefinition<
  Shape extends z.ZodRawShape = Record<never, never>,
  Specs extends Record<string, ClientSpec> = Record<never, never>,
  Deps = ServiceContext<ServiceConfig<Shape>, ConnectedClients<Specs>>,
  Context = ServiceContext<ServiceConfig<Shape>, ConnectedClients<Specs>>,
> {
  /** The service's name: its logs' `service`, its metrics' label, its tracing's `service.name`. */
  name: string;
  defaults: { grpcPort: number; metricsPort: number };
  protoFile: string;
  /**
   * The service's database, when it has one: its pool (DATABASE_URL, the runtime role), its migrations at start with
   * MIGRATE_ON_START, and its health (while PostgreSQL is down the service fails calls fast and reports NOT_SERVING).
   * Without it the service reads no database variable and nothing of its health depends on PostgreSQL.
   */
  openDatabase?: OpenDatabase;
  /** The service's own environment variables, parsed with the common ones (fail fast, exit 78). */
  config?: Shape;
  /** The other services it calls, from its configuration. */
  clients?(config: ServiceConfig<Shape>): Specs;
  /** Builds what `createServer` and `tasks` take; without it they get the ServiceContext itself. */
  dependencies?(context: Context): Deps;
  /** The gRPC services the process serves (the Users process serves UsersService and OrganizationsService). */
  createServer(deps: NoInfer<Deps>): ServiceRegistration | ServiceRegistration[];
  /** Periodic work (e.g. purging what a retention window has passed); awaited at shutdown after the gRPC server. */
  tasks?(deps: NoInfer<Deps>, config: ServiceConfig<Shape>): BackgroundTask[];
}

/**
 * The process wiring of a gRPC service: tracing, configuration (fail fast), logger, metrics, the database pool and
 * optional migrations (when the service has a database), clients of other services, the gRPC server with health (and reflection when GRPC_REFLECTION asks), background tasks,
 * /metrics, and graceful shutdown. A failure to start is reported on stderr and exits 1.
 */
export function runService<
  Shape extends z.ZodRawShape = Record<never, never>,
  Specs extends Record<string, ClientSpec> = Record<never, never>,
>(
  service: ServiceDefinition<Shape, Specs, ServiceContext<ServiceConfig<Shape>, ConnectedClients<Specs>>> & {
    openDatabase: OpenDatabase;
    dependencies?: undefined;
  },
): Promise<void>;
export function runService<Shape extends z.ZodRawShape, Specs extends Record<string, ClientSpec>, Deps>(
  service: ServiceDefinition<Shape, Specs, Deps> & {
    openDatabase: OpenDatabase;
    dependencies(context: ServiceContext<ServiceConfig<Shape>, ConnectedClients<Specs>>): Deps;
  },
): Promise<void>;
export function runService<Shape extends z.ZodRawShape, Specs extends Record<string, ClientSpec>, Deps>(
  service: ServiceDefinition<
    Shape,
    Specs,
    Deps,
    StatelessServiceContext<ServiceConfig<Shape>, ConnectedClients<Specs>>
  > & {
    openDatabase?: undefined;
    dependencies(context: StatelessServiceContext<ServiceConfig<Shape>, ConnectedClients<Specs>>): Deps;
  },
): Promise<void>;
export async function runService<Shape extends z.ZodRawShape, Specs extends Record<string, ClientSpec>, Deps>(
  service: ServiceDefinition<Shape, Specs, Deps>,
): Promise<void> {
  const schema = serviceConfigSchema(service.defaults)
    .extend(service.openDatabase ? databaseConfigShape : {})
    .extend(service.config ?? {})
    .superRefine(checkServiceConfig);
  return runProcess(service.name, schema, (context) =>
    start(service, context as unknown as ProcessContext<ServiceConfig<Shape>>),
  );
}

/** The service's own parts, started inside runProcess (which made its configuration, logger, metrics and TLS). */
async function start<Shape extends z.ZodRawShape, Specs extends Record<string, ClientSpec>, Deps>(
  service: ServiceDefinition<Shape, Specs, Deps>,
  { config, logger, metrics, tls }: ProcessContext<ServiceConfig<Shape>>,
): Promise<StartedProcess> {
  const db =
    service.openDatabase &&
    (await openServiceDatabase(service.openDatabase, config as unknown as DatabaseConfig, metrics, logger));
  const specs = service.clients?.(config) ?? ({} as Specs);
  // Each client's service is health-checked: while it is down its calls fail at once (UNAVAILABLE) rather than
  // wait for their deadline. Reported on /healthz/dependencies and `dependency_up`; never readiness.
  const health = Object.entries(specs).map(([name, spec]) => ({
    name,
    spec,
    healthClient: new HealthClient(spec.address, tls.channelCredentials()),
  }));
  // PostgreSQL down: calls fail fast with UNAVAILABLE and the service reports NOT_SERVING to its callers, but the
  // process stays ready and live (it recovers by itself when the database is back).
  const dependencies = new DependencyMonitor({
    checks: [
      ...(db ? [databaseCheck(db.knex)] : []),
      ...health.map(({ name, spec, healthClient }) =>
        grpcHealthCheck(name, healthClient, grpcServiceName(spec.client.service)),
      ),
    ],
    metrics,
    logger,
    onChange: (name, up) => name === 'postgres' && grpcServer.setServing(up),
  });
  const clients = Object.fromEntries(
    health.map(({ name, spec }) => [
      name,
      createGrpcClient(spec.client, spec.address, {
        credentials: tls.channelCredentials(),
        defaultDeadlineMs: spec.deadlineMs,
        ...(spec.longCalls && { longCalls: true }),
        metrics,
        available: () => dependencies.isUp(name),
        circuitBreaker: circuitBreakerConfig(config),
        logger,
      }),
    ]),
  ) as ConnectedClients<Specs>;
  // A service without a database gets no `knex` (runService's overloads type its context without it).
  const context = { config, logger, metrics, clients, ...(db && { knex: db.knex }) } as ServiceContext<
    ServiceConfig<Shape>,
    ConnectedClients<Specs>
  >;
  // Without `dependencies` the definition's Deps is ServiceContext (its default, as nothing else can infer it).
  const deps = service.dependencies ? service.dependencies(context) : (context as Deps);
  const grpcServer = await startGrpcServer({
    tls,
    address: config.GRPC_ADDRESS,
    services: [service.createServer(deps)].flat(),
    protoFiles: [service.protoFile],
    logger,
    metrics,
    ...connectionAge(config),
    ...(db && { failFast: whileDatabaseDown(dependencies) }),
    reflection: config.GRPC_REFLECTION,
  });
  dependencies.start();
  let draining = false;

  const running = (service.tasks?.(deps, config) ?? []).map((task) =>
    runEvery(task, (err) => logger.warn({ err, task: task.name }, 'background task failed')),
  );

  return {
    // The gRPC health of the whole server as HTTP probes too (Kubernetes' gRPC probes speak plaintext only, so with
    // mutual TLS on the chart probes these): live while the process serves, ready until it starts draining.
    metricsRoutes: {
      documents: { '/healthz/dependencies': () => dependencies.report() },
      probes: { '/healthz': () => true, '/readyz': () => !draining },
    },
    shutdown: [
      {
        name: 'grpc',
        run: () => {
          draining = true;
          return grpcServer.shutdown(Math.max(1_000, config.SHUTDOWN_TIMEOUT_MS - 1_000));
        },
      },
      { name: 'tasks', run: () => Promise.all(running.map((r) => r.stop())) },
      { name: 'dependencies', run: () => dependencies.stop() },
      {
        name: 'clients',
        run: () => {
          Object.values<{ close(): void }>(clients).forEach((c) => c.close());
          health.forEach(({ healthClient }) => healthClient.close());
        },
      },
      { name: 'database', run: () => db?.close() },
    ],
  };
}

/**
 * The pool of a service's database as its runtime role (DATABASE_URL), after its migrations when MIGRATE_ON_START:
 * those run as the schema owner, in a pool of their own that is closed again.
 */
async function openServiceDatabase(
  openDatabase: OpenDatabase,
  config: DatabaseConfig,
  metrics: Metrics,
  logger: Logger,
): Promise<Database> {
  const db = openDatabase({
    url: config.DATABASE_URL,
    poolMax: config.DATABASE_POOL_MAX,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    costlyStatementTimeoutMs: config.DATABASE_COSTLY_STATEMENT_TIMEOUT_MS,
    organizationShare: {
      ...(config.DATABASE_ORGANIZATION_MAX_CONNECTIONS !== undefined && {
        perOrganization: config.DATABASE_ORGANIZATION_MAX_CONNECTIONS,
      }),
      ...(config.DATABASE_RESERVED_CONNECTIONS !== undefined && { reserved: config.DATABASE_RESERVED_CONNECTIONS }),
      waitMs: config.DATABASE_ORGANIZATION_WAIT_MS,
    },
    metrics,
    logger,
  });
  if (config.MIGRATE_ON_START) {
    const owner = openDatabase({ url: config.MIGRATION_DATABASE_URL!, poolMax: 2, logger });
    const { applied, grantedTo } = await owner
      .migrate({ runtimeRole: config.DATABASE_RUNTIME_ROLE ?? databaseUser(config.DATABASE_URL)! })
      .finally(() => owner.close());
    logger.info({ applied, granted_to: grantedTo }, 'migrations applied');
  }
  // Best effort: while PostgreSQL is not reachable the service starts anyway (its health check reports it).
  roleBypassingPolicies(db.knex).then(
    (role) => {
      if (role)
        logger.warn(
          { role },
          'the runtime role bypasses row-level security (superuser or BYPASSRLS): organizations are kept apart by the ' +
            "queries' own filters only; run the service as a role that owns nothing (docs/operations.md)",
        );
    },
    () => {},
  );
  return db;
}

/** Runs a task every `everyMs` (never two runs of it at once); `stop` waits for a run in progress. */
export function runEvery(task: BackgroundTask, onFailure: (err: unknown) => void): { stop(): Promise<void> } {
  let current: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (current) return;
    current = task
      .run()
      .catch(onFailure)
      .finally(() => (current = undefined));
  }, task.everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all([current, task.stop?.()]);
    },
  };
}

/**
 * `npm run migrate -w <service>` (the chart's migration Job): applies the service's migrations to its schema as the
 * schema owner (MIGRATION_DATABASE_URL), then grants the runtime role (the user of DATABASE_URL, or
 * DATABASE_RUNTIME_ROLE) DML on its tables; exits.
 */
export async function runMigrations(name: string, openDatabase: OpenDatabase): Promise<void> {
  // Two connections at most: the migration lock and the migration (counted in the chart's connection budget).
  const config = loadConfigOrExit(
    z
      .object({
        MIGRATION_DATABASE_URL: postgresUrl(),
        DATABASE_URL: postgresUrl().optional(),
        DATABASE_RUNTIME_ROLE: z.string().min(1).optional(),
        DATABASE_POOL_MAX: env.positiveInt(2),
        LOG_LEVEL: env.logLevel(),
        /** expand (the chart's pre-upgrade Job), contract (its post-upgrade Job, once the rollout is done) or all. */
        MIGRATION_PHASE: z.enum(MIGRATION_PHASES).default('all'),
      })
      .refine((c) => c.DATABASE_RUNTIME_ROLE ?? (c.DATABASE_URL && databaseUser(c.DATABASE_URL)), {
        path: ['DATABASE_URL'],
        message: 'the runtime role to grant to: a DATABASE_URL with a user, or DATABASE_RUNTIME_ROLE',
      }),
  );
  const logger = createLogger({ service: `${name}-migrate`, level: config.LOG_LEVEL });
  const db = openDatabase({ url: config.MIGRATION_DATABASE_URL, poolMax: config.DATABASE_POOL_MAX, logger });
  try {
    const runtimeRole = config.DATABASE_RUNTIME_ROLE ?? databaseUser(config.DATABASE_URL!)!;
    const { applied, grantedTo } = await db.migrate({ runtimeRole, phase: config.MIGRATION_PHASE });
    if (!grantedTo) logger.warn({ role: runtimeRole }, 'the runtime role is the migrating role: it owns the schema');
    logger.info(
      { applied, granted_to: grantedTo, phase: config.MIGRATION_PHASE },
      applied.length ? 'migrations applied' : 'schema up to date',
    );
  } catch (err) {
    logger.error({ err }, 'migration failed');
    process.exitCode = 1;
  } finally {
    await db.close();
  }
}
