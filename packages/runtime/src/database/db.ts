import knexFactory, { type Knex } from 'knex';
import { existsSync } from 'node:fs';
import { DeclaringPgClient } from './declaring-client';
import type { Logger } from '../telemetry/logger';
import type { Metrics } from '../telemetry/metrics';
import { defaultOrganizationShare, OrganizationShare, setOrganizationLimits } from './organization-share';
import { inSpan, SpanKind, type TraceContext } from '../telemetry/tracing';

export type { Knex } from 'knex';

export interface DatabaseOptions {
  url: string;
  /** The service's own schema: created if missing, holds its migrations table, first on the search path. */
  schema: string;
  migrationsDirectory: string;
  /**
   * The contract phase's migrations (expand → backfill → contract): what must wait until no replica of the previous
   * release serves (e.g. row-level security that an old replica, which declares no organization, would see nothing
   * through). The chart runs them after an upgrade's rollout (a post-upgrade hook), `npm start` right after the others.
   */
  contractMigrationsDirectory?: string;
  applicationName: string;
  poolMax?: number;
  /** Server-side cap on any one statement. */
  statementTimeoutMs?: number;
  /**
   * The shorter cap of a costly read's statements (tenancy.ts, COSTLY_READ): SCIM lists and filters, drive pages.
   * Unset: they get the general one.
   */
  costlyStatementTimeoutMs?: number;
  /**
   * Each organization's share of the pool (organization-share.ts); unset: work inside organizations is not limited
   * (tests, tools). `perOrganization` and `reserved` default to half and a quarter of the pool.
   */
  organizationShare?: { perOrganization?: number; reserved?: number; waitMs: number };
  metrics?: Metrics;
  /** Where knex's own warnings go (e.g. a pooled connection found ended): the process's JSON log, not the console. */
  logger?: Logger;
  /**
   * Append-only tables of the schema (e.g. an audit log): the runtime role may INSERT and SELECT them, never UPDATE,
   * DELETE or TRUNCATE them.
   */
  appendOnlyTables?: string[];
}

/** Which migrations to apply: the expand phase (before the rollout), the contract phase (after it), or both. */
export type MigrationPhase = 'expand' | 'contract' | 'all';
export const MIGRATION_PHASES = ['expand', 'contract', 'all'] as const;
const CONTRACT_TABLE = 'knex_migrations_contract';

export interface MigrateOptions {
  /** Default 'all'. */
  phase?: MigrationPhase;
  /**
   * The login role the service runs as (DML only). After the migrations, and every time they run, it is given USAGE
   * on the schema, SELECT/INSERT/UPDATE/DELETE on its tables (INSERT/SELECT only on the append-only ones) and USAGE
   * on its sequences, and the migrating role's default privileges give the same to every table it creates there
   * later. Unset, or the migrating role itself: no grants (one role does both, as with a single development URL).
   */
  runtimeRole?: string;
}

export interface Database {
  knex: Knex;
  schema: string;
  migrate(options?: MigrateOptions): Promise<{ applied: string[]; grantedTo?: string }>;
  close(): Promise<void>;
}

/** A pg client as knex's pool holds it (knex calls `query` with a callback; `__knex__disposed` retires it). */
interface PooledConnection {
  query: (...args: unknown[]) => unknown;
  __knex__disposed?: unknown;
}

/**
 * A statement that fails because its session ended (its backend terminated while it ran) retires its connection
 * at once: knex checks `__knex__disposed` (which it sets itself only when the socket's end is seen, a moment later)
 * before it hands a connection out, so a read retried right away gets a fresh connection, not the dead one.
 */
function retireOnDroppedSession(connection: PooledConnection): void {
  const query = connection.query;
  connection.query = (...args: unknown[]) => {
    const callback = args[args.length - 1];
    if (typeof callback === 'function') {
      args[args.length - 1] = (err: unknown, ...rest: unknown[]) => {
        if (err && isDroppedConnection(err)) connection.__knex__disposed ??= err;
        return (callback as (...a: unknown[]) => unknown)(err, ...rest);
      };
    }
    return query.apply(connection, args);
  };
}

/** knex's logger as the process's JSON log: its messages are plain strings (e.g. "Connection Error: …"). */
function knexLog(logger: Logger): Knex.Config['log'] {
  return {
    warn: (message: unknown) => logger.warn({ component: 'knex' }, String(message)),
    error: (message: unknown) => logger.error({ component: 'knex' }, String(message)),
    deprecate: (method: unknown, alternative: unknown) =>
      logger.warn({ component: 'knex' }, `${String(method)} is deprecated: use ${String(alternative)}`),
    debug: (message: unknown) => logger.debug({ component: 'knex' }, String(message)),
  };
}

/** Counts the costly reads cancelled at their statement timeout, by pool and organization id (bounded by customers). */
function costlyCancellations(metrics: Metrics, pool: string): (organizationId: string) => void {
  const counter = metrics.counter({
    name: 'db_costly_reads_cancelled_total',
    help: 'Costly reads (SCIM lists, drive pages) cancelled at DATABASE_COSTLY_STATEMENT_TIMEOUT_MS, by pool and organization id.',
    labelNames: ['pool', 'organization'] as const,
  });
  return (organization) => counter.inc({ pool, organization });
}

/** One knex instance per service, confined to the service's own schema. */
export function createDatabase(options: DatabaseOptions): Database {
  const statementTimeout = options.statementTimeoutMs ?? 5_000;
  const poolMax = options.poolMax ?? 10;
  const knex = knexFactory({
    client: DeclaringPgClient ?? 'pg',
    ...(options.logger && { log: knexLog(options.logger) }),
    // pg's pipeline mode (pg.Client's `pipeline`, which knex's and @types/pg's types do not list yet) writes a
    // statement without waiting for the answers of those before it on the connection. A light read's BEGIN and first
    // statement then share one round trip (tenancy.ts); statements issued one after another, as knex's own are, run
    // as without it.
    connection: {
      connectionString: options.url,
      application_name: options.applicationName,
      pipeline: true,
    } as Knex.StaticConnectionConfig,
    searchPath: [options.schema],
    pool: {
      min: 0,
      max: poolMax,
      acquireTimeoutMillis: 5_000,
      createTimeoutMillis: 3_000,
      idleTimeoutMillis: 30_000,
      afterCreate(connection: PooledConnection, done: (err: Error | null, c: unknown) => void) {
        retireOnDroppedSession(connection);
        connection.query(`SET statement_timeout = ${Math.floor(statementTimeout)}`, (err: Error | null) =>
          done(err, connection),
        );
      },
    },
    migrations: {
      directory: options.migrationsDirectory,
      schemaName: options.schema,
      tableName: 'knex_migrations',
      loadExtensions: ['.js'],
    },
  });
  const share = options.organizationShare;
  const shareDefaults = defaultOrganizationShare(poolMax);
  setOrganizationLimits(knex, {
    ...(options.costlyStatementTimeoutMs ? { costlyStatementTimeoutMs: options.costlyStatementTimeoutMs } : {}),
    ...(options.metrics && { costlyCancelled: costlyCancellations(options.metrics, options.schema) }),
    ...(share && {
      share: new OrganizationShare({
        poolSize: poolMax,
        perOrganization: share.perOrganization ?? shareDefaults.perOrganization,
        reserved: share.reserved ?? shareDefaults.reserved,
        waitMs: share.waitMs,
        pool: options.schema,
        ...(options.metrics ? { metrics: options.metrics } : {}),
      }),
    }),
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
    async migrate(migrateOptions = {}) {
      // A least-privilege role owns its schema but may not create schemas: only create when missing.
      const { rows } = await knex.raw<{ rows: unknown[] }>('SELECT 1 FROM pg_namespace WHERE nspname = ?', [
        options.schema,
      ]);
      if (rows.length === 0) await knex.schema.createSchemaIfNotExists(options.schema);
      const phase = migrateOptions.phase ?? 'all';
      const applied: string[] = [];
      if (phase !== 'contract') applied.push(...((await knex.migrate.latest()) as [number, string[]])[1]);
      if (
        phase !== 'expand' &&
        options.contractMigrationsDirectory &&
        existsSync(options.contractMigrationsDirectory)
      ) {
        const [, contract] = (await knex.migrate.latest({
          directory: options.contractMigrationsDirectory,
          tableName: CONTRACT_TABLE,
        })) as [number, string[]];
        applied.push(...contract);
      }
      const role = migrateOptions.runtimeRole;
      const { rows: me } = await knex.raw<{ rows: { user: string }[] }>('SELECT current_user AS user');
      if (!role || role === me[0]!.user) return { applied };
      await grantRuntimeAccess(knex, options.schema, role, options.appendOnlyTables ?? []);
      return { applied, grantedTo: role };
    },
    close: () => knex.destroy(),
  };
}

const BOOKKEEPING_TABLES = ['knex_migrations', 'knex_migrations_lock', CONTRACT_TABLE, `${CONTRACT_TABLE}_lock`];

/**
 * The privileges of a service's runtime role in its schema, given by the role that runs the migrations (the schema's
 * owner). Idempotent; run after every migration run, so it also repairs drift. The rule is generic: whatever table the
 * owner creates in the schema later gets DML for the runtime role by the default privileges set here, whichever
 * migration creates it; only append-only tables are listed (their UPDATE and TRUNCATE are taken back; a DELETE
 * meets their trigger).
 * The runtime role owns nothing, so it can neither ALTER, DROP nor TRUNCATE a table nor drop or disable a trigger.
 */
export async function grantRuntimeAccess(
  knex: Knex,
  schema: string,
  role: string,
  appendOnlyTables: string[],
): Promise<void> {
  const { rows } = await knex.raw<{ rows: unknown[] }>('SELECT 1 FROM pg_roles WHERE rolname = ?', [role]);
  if (rows.length === 0) throw new Error(`the runtime role ${JSON.stringify(role)} does not exist: create it first`);
  await knex.transaction(async (trx) => {
    await trx.raw('GRANT USAGE ON SCHEMA ?? TO ??', [schema, role]);
    await trx.raw('ALTER DEFAULT PRIVILEGES IN SCHEMA ?? GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ??', [
      schema,
      role,
    ]);
    await trx.raw('ALTER DEFAULT PRIVILEGES IN SCHEMA ?? GRANT USAGE, SELECT ON SEQUENCES TO ??', [schema, role]);
    await trx.raw('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ?? TO ??', [schema, role]);
    await trx.raw('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ?? TO ??', [schema, role]);
    // Anything more that was ever given (TRUNCATE, TRIGGER, REFERENCES) is taken back.
    await trx.raw('REVOKE TRUNCATE, TRIGGER, REFERENCES ON ALL TABLES IN SCHEMA ?? FROM ??', [schema, role]);
    const { rows: tables } = await trx.raw<{ rows: { name: string }[] }>(
      `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ? AND c.relkind IN ('r', 'p') AND c.relname = ANY(?)`,
      [schema, [...BOOKKEEPING_TABLES, ...appendOnlyTables]],
    );
    for (const { name } of tables) {
      // The migrations' own bookkeeping is none of the runtime's business; append-only tables: INSERT, SELECT, and
      // DELETE, which their trigger refuses except for the organization an erasure declares (database/erasure.ts).
      const bookkeeping = BOOKKEEPING_TABLES.includes(name);
      await trx.raw(bookkeeping ? 'REVOKE ALL ON ??.?? FROM ??' : 'REVOKE UPDATE ON ??.?? FROM ??', [
        schema,
        name,
        role,
      ]);
    }
  });
}

/** The user name of a postgres:// URL (decoded), undefined when it names none. */
export function databaseUser(url: string): string | undefined {
  try {
    const user = new URL(url).username;
    return user ? decodeURIComponent(user) : undefined;
  } catch {
    return undefined;
  }
}

/** Runs one statement of a data-access module; `operation` is its SQL verb, `text` a short description of it. */
export type SqlStatement = <T>(
  trace: TraceContext | undefined,
  operation: string,
  text: string,
  run: () => Promise<T>,
) => Promise<T>;

/** PostgreSQL codes of a session ended under the statement: admin_shutdown (pg_terminate_backend, a fast shutdown), crash_shutdown, connection_failure, connection_does_not_exist. */
const DROPPED_PG_CODES = new Set(['57P01', '57P02', '08006', '08003']);
const DROPPED_NODE_CODES = new Set(['ECONNRESET', 'EPIPE']);

/**
 * Whether a statement failed because its connection was dropped (not because of the statement): what a pooled
 * connection whose backend was terminated answers, during a statement or at the next one.
 */
export function isDroppedConnection(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  if (typeof e?.code === 'string' && (DROPPED_PG_CODES.has(e.code) || DROPPED_NODE_CODES.has(e.code))) return true;
  return (
    typeof e?.message === 'string' &&
    /Connection terminated|connection is closed|Client has encountered a connection error/i.test(e.message)
  );
}

/**
 * Runs a read, and again while its connection turns out to have been dropped, at most `attempts` times in all. Each
 * dropped connection is retired (knex discards a connection that saw an error) and the next attempt starts at once on
 * another: a burst of terminated connections costs a few round trips, not an error to the caller. A failure of another
 * kind, or the last attempt's, is the caller's to handle.
 */
export async function readWithRetry<T>(run: () => Promise<T>, attempts = 2): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (attempt >= attempts || !isDroppedConnection(err)) throw err;
    }
  }
}

/**
 * How many attempts a read on `knex`'s pool gets (readWithRetry): one per pooled connection, since a failover or a
 * pg_terminate_backend of every session leaves each idle one dead and the pool notices one at a time, and one more,
 * which then runs on a connection opened after the drop.
 */
export function droppedReadAttempts(knex: Knex): number {
  const pool = (knex.client as { pool?: { max?: number } }).pool;
  return (pool?.max ?? 1) + 1;
}

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
