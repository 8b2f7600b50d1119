import knexFactory, { type Knex } from 'knex';
import type { Metrics } from './metrics';
import { inSpan, SpanKind, type TraceContext } from './tracing';

export type { Knex } from 'knex';

export interface DatabaseOptions {
  url: string;
  /** The service's own schema: created if missing, holds its migrations table, first on the search path. */
  schema: string;
  migrationsDirectory: string;
  applicationName: string;
  poolMax?: number;
  /** Server-side cap on any one statement. */
  statementTimeoutMs?: number;
  metrics?: Metrics;
}

export interface Database {
  knex: Knex;
  schema: string;
  migrate(): Promise<{ applied: string[] }>;
  close(): Promise<void>;
}

/** One knex instance per service, confined to the service's own schema. */
export function createDatabase(options: DatabaseOptions): Database {
  const statementTimeout = options.statementTimeoutMs ?? 5_000;
  const knex = knexFactory({
    client: 'pg',
    connection: { connectionString: options.url, application_name: options.applicationName },
    searchPath: [options.schema],
    pool: {
      min: 0,
      max: options.poolMax ?? 10,
      acquireTimeoutMillis: 5_000,
      createTimeoutMillis: 3_000,
      idleTimeoutMillis: 30_000,
      afterCreate(
        connection: { query: (sql: string, cb: (err: Error | null) => void) => void },
        done: (err: Error | null, c: unknown) => void,
      ) {
        connection.query(`SET statement_timeout = ${Math.floor(statementTimeout)}`, (err) => done(err, connection));
      },
    },
    migrations: {
      directory: options.migrationsDirectory,
      schemaName: options.schema,
      tableName: 'knex_migrations',
      loadExtensions: ['.js'],
    },
  });
  if (options.metrics) {
    options.metrics.registerPool(options.schema, () => {
      const pool = knex.client.pool as
        { numUsed(): number; numFree(): number; numPendingAcquires(): number } | undefined;
      return pool
        ? { used: pool.numUsed(), idle: pool.numFree(), pending: pool.numPendingAcquires() }
        : { used: 0, idle: 0, pending: 0 };
    });
  }
  return {
    knex,
    schema: options.schema,
    async migrate() {
      // A least-privilege role owns its schema but may not create schemas: only create when missing.
      const { rows } = await knex.raw<{ rows: unknown[] }>('SELECT 1 FROM pg_namespace WHERE nspname = ?', [
        options.schema,
      ]);
      if (rows.length === 0) await knex.schema.createSchemaIfNotExists(options.schema);
      const [, applied] = (await knex.migrate.latest()) as [number, string[]];
      return { applied };
    },
    close: () => knex.destroy(),
  };
}

/** Runs one statement of a data-access module; `operation` is its SQL verb, `text` a short description of it. */
export type SqlStatement = <T>(
  trace: TraceContext | undefined,
  operation: string,
  text: string,
  run: () => Promise<T>,
) => Promise<T>;

/**
 * The SQL span helper of the data-access module of `schema`: each statement becomes a client span of the caller's
 * trace named "<operation> <schema>" with the OpenTelemetry database attributes (only when that trace is recorded).
 */
export function sqlSpans(schema: string): SqlStatement {
  return (trace, operation, text, run) =>
    inSpan(
      trace,
      `${operation} ${schema}`,
      SpanKind.CLIENT,
      { 'db.system.name': 'postgresql', 'db.namespace': schema, 'db.operation.name': operation, 'db.query.text': text },
      run,
    );
}
