import type { Knex } from 'knex';
import type { CallContext } from '../grpc/grpc-server';
import { isOrganizationId, requireOrganization } from '../grpc/organization-metadata';
import { droppedReadAttempts, isDroppedConnection, readWithRetry } from './db';
import { BEGIN_WITH, declaresOnBegin } from './declaring-client';
import { organizationLimits, queryTooCostly } from './organization-share';
import { ORGANIZATION_SETTING } from './organization-setting';

/*
 * Organizations (customer companies) share one installation; the database keeps them apart. Every tenant row has an
 * `organization_id`, and PostgreSQL row-level security (FORCE: the table's owner too) shows a transaction only the rows
 * of the organization it declared with `SET LOCAL mileage.organization_id`. A query that forgets its own organization
 * filter therefore still finds only that organization's rows, and a transaction that declared none finds nothing.
 */

/** Set (to 'on') only by `acrossOrganizations`: the named system work that must see every organization. */
export const ALL_ORGANIZATIONS_SETTING = 'mileage.all_organizations';

/**
 * Runs `work` in the transaction of the call's organization (requireOrganization): the one way a handler writes, or
 * reads through knex, inside it. A read (`read: true`) whose connection turns out to have been dropped runs again,
 * on another (readWithRetry).
 */
export function inCallOrganization<T>(
  knex: Knex,
  ctx: Pick<CallContext, 'organizationId'>,
  work: (trx: Knex.Transaction, organizationId: number) => Promise<T>,
  options: { read?: boolean } = {},
): Promise<T> {
  const organizationId = requireOrganization(ctx);
  const run = () => inOrganization(knex, organizationId, (trx) => work(trx, organizationId));
  return options.read ? readWithRetry(run, droppedReadAttempts(knex)) : run();
}

/** Runs the statements of a read inside the call's organization as a light read (readInOrganization: the hot reads). */
export function readInCallOrganization<T>(
  knex: Knex,
  ctx: Pick<CallContext, 'organizationId'>,
  work: (statements: ReadStatements, organizationId: number) => Promise<T>,
  options?: LightReadOptions,
): Promise<T> {
  const organizationId = requireOrganization(ctx);
  return readInOrganization(knex, organizationId, (run) => work(run, organizationId), options);
}

/**
 * Runs `work` in one transaction that sees (and may write) only the rows of `organizationId`. Nested transactions of
 * `work` (`trx.transaction`) are savepoints of this one and keep its setting.
 */
export async function inOrganization<T>(
  knex: Knex,
  organizationId: number,
  work: (trx: Knex.Transaction) => Promise<T>,
): Promise<T> {
  const declaration = organizationDeclaration(organizationId);
  const share = organizationLimits(knex)?.share;
  if (!share) return declaredTransaction(knex, declaration, work);
  return share.run(organizationId, () => declaredTransaction(knex, declaration, work));
}

/**
 * Runs `work` in one REPEATABLE READ, READ ONLY transaction of `organizationId`: all its statements read one snapshot,
 * so what they read page by page (an export's part) is consistent as of one instant, whatever commits meanwhile.
 */
export function snapshotInOrganization<T>(
  knex: Knex,
  organizationId: number,
  work: (trx: Knex.Transaction) => Promise<T>,
): Promise<T> {
  const declaration = organizationDeclaration(organizationId);
  const snapshot = (): Promise<T> =>
    declaresOnBegin(knex)
      ? knex.transaction(work, {
          [BEGIN_WITH]: beginDeclaring(declaration, ' ISOLATION LEVEL REPEATABLE READ READ ONLY'),
        } as Knex.TransactionConfig)
      : knex.transaction(
          async (trx) => {
            await trx.raw('SELECT set_config(?, ?, true)', [declaration.setting, declaration.value]);
            return work(trx);
          },
          { isolationLevel: 'repeatable read', readOnly: true },
        );
  // Its connection is one of the organization's places in the pool, as any work inside the organization: an export of
  // a large organization holds it for minutes, and that must not come out of the other organizations' connections.
  const share = organizationLimits(knex)?.share;
  return share ? share.run(organizationId, snapshot) : snapshot();
}

/** A transaction's declaration: the setting the policies read, and its value. */
interface Declaration {
  setting: string;
  value: string;
}

/** The declaration of `organizationId`, which must be an organization id (it is written into a statement's text). */
function organizationDeclaration(organizationId: number): Declaration {
  if (!isOrganizationId(organizationId)) throw new Error(`not an organization id: ${String(organizationId)}`);
  return { setting: ORGANIZATION_SETTING, value: String(organizationId) };
}

const ALL_ORGANIZATIONS: Declaration = { setting: ALL_ORGANIZATIONS_SETTING, value: 'on' };

/**
 * BEGIN and the declaration as one simple query (one round trip). The value is a validated integer or 'on': nothing a
 * caller can shape reaches this text.
 */
const beginDeclaring = ({ setting, value }: Declaration, mode = '', statementTimeoutMs?: number) =>
  `BEGIN${mode}; SELECT set_config('${setting}', '${value}', true)` +
  (statementTimeoutMs ? `; SET LOCAL statement_timeout = ${Math.floor(statementTimeoutMs)}` : '');

/** A knex transaction that declares first: with BEGIN in one round trip where the client can. */
function declaredTransaction<T>(
  knex: Knex,
  declaration: Declaration,
  work: (trx: Knex.Transaction) => Promise<T>,
): Promise<T> {
  if (declaresOnBegin(knex))
    return knex.transaction(work, { [BEGIN_WITH]: beginDeclaring(declaration) } as Knex.TransactionConfig);
  return knex.transaction(async (trx) => {
    await trx.raw('SELECT set_config(?, ?, true)', [declaration.setting, declaration.value]);
    return work(trx);
  });
}

/**
 * Runs `work` in one transaction that sees every organization: only for system work that is by nature across them
 * (outbox relays, the webhook worker, resolving a SCIM token or a caller to their organization, seeding). Every use is
 * a named exception; nothing reaches it from a request's own filters.
 */
export async function acrossOrganizations<T>(knex: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return declaredTransaction(knex, ALL_ORGANIZATIONS, work);
}

/** How a statement's columns are parsed (pg's `types` query option), where pg's own parsers are not wanted. */
export interface ColumnParsers {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (text: string) => unknown;
}

/**
 * Runs one statement of a read with knex's `?` placeholders, straight on the connection (pg's own client, no query
 * builder): prepared once per connection under `name` when one is given, its columns parsed by `types` when given.
 */
export type ReadStatements = <R = Record<string, unknown>>(
  text: string,
  bindings?: readonly unknown[],
  name?: string,
  types?: ColumnParsers,
) => Promise<{ rows: R[] }>;

/** A pg client as knex's pool holds it (`__knex__disposed` retires it: see db.ts). */
interface RawConnection {
  query(config: { text: string; values?: unknown[]; name?: string; types?: ColumnParsers }): Promise<{
    rows: unknown[];
  }>;
  __knex__disposed?: unknown;
}

interface KnexClient {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
  positionBindings(text: string): string;
  emit(event: 'query', query: { method: 'raw'; sql: string; bindings: readonly unknown[] }): boolean;
}

const clientOf = (knex: Knex) => knex.client as KnexClient;

/** Named statements' texts with pg's placeholders: named ones are few and constant, so each is converted once. */
const positionalTexts = new Map<string, string>();

function statementsOn(knex: Knex, connection: RawConnection): ReadStatements {
  const client = clientOf(knex);
  const positional = (text: string, name: string | undefined) => {
    if (name === undefined) return client.positionBindings(text);
    let converted = positionalTexts.get(text);
    if (converted === undefined) positionalTexts.set(text, (converted = client.positionBindings(text)));
    return converted;
  };
  return async (text, bindings = [], name, types) => {
    // Seen by knex's 'query' listeners as any statement of knex's own.
    client.emit('query', { method: 'raw', sql: text, bindings });
    return (await connection.query({
      text: positional(text, name),
      values: [...bindings],
      ...(name ? { name } : {}),
      ...(types ? { types } : {}),
    })) as { rows: never[] };
  };
}

/** The statements of a knex transaction, on its own connection: one read function serves both kinds of transaction. */
export async function statementsOf(trx: Knex.Transaction): Promise<ReadStatements> {
  return statementsOn(trx, (await clientOf(trx).acquireConnection()) as RawConnection);
}

/** How a light read's statements travel. */
export interface LightReadOptions {
  /**
   * The read is one statement: its COMMIT is written right behind it, so BEGIN, the statement and COMMIT share one
   * round trip to PostgreSQL (the hot point reads). A second statement is refused: it would run after the COMMIT.
   */
  oneStatement?: boolean;
  /**
   * The read can be costly (a SCIM list with a filter, a page of drives): its statements get the database's shorter
   * costly statement timeout (DATABASE_COSTLY_STATEMENT_TIMEOUT_MS), and one that hits it fails with
   * RESOURCE_EXHAUSTED, reason QUERY_TOO_COSTLY, instead of holding a connection for the general timeout.
   */
  costly?: boolean;
}

/** The options of a read that can be costly (LightReadOptions.costly). */
export const COSTLY_READ: LightReadOptions = Object.freeze({ costly: true });

/** PostgreSQL's query_canceled: what a statement past its statement_timeout fails with. */
const QUERY_CANCELED = '57014';

/** The options of a read that is one statement (its COMMIT travels with it). */
export const ONE_STATEMENT: LightReadOptions = Object.freeze({ oneStatement: true });

/**
 * Runs the statements of a read in one READ ONLY transaction of `organizationId`, as inOrganization declares it, but
 * without a knex transaction: the BEGIN and the declaration travel as one simple query, and the statements go to pg
 * directly. Measured: a knex transaction cost about twice the CPU of the same four round trips on pg
 * (docs/benchmarks.md, "Organizations"); the hot reads take this path, every write the knex one. A read whose
 * connection turns out to have been dropped runs again, on another (readWithRetry): it wrote nothing.
 */
export function readInOrganization<T>(
  knex: Knex,
  organizationId: number,
  work: (statements: ReadStatements) => Promise<T>,
  options: LightReadOptions = {},
): Promise<T> {
  const declaration = organizationDeclaration(organizationId);
  const share = organizationLimits(knex)?.share;
  if (!share) return lightRead(knex, declaration, work, options);
  return share.run(organizationId, () => lightRead(knex, declaration, work, options));
}

/** readInOrganization across every organization: the reads of acrossOrganizations' named exceptions. */
export function readAcrossOrganizations<T>(
  knex: Knex,
  work: (statements: ReadStatements) => Promise<T>,
  options: LightReadOptions = {},
): Promise<T> {
  return lightRead(knex, ALL_ORGANIZATIONS, work, options);
}

function lightRead<T>(
  knex: Knex,
  declaration: Declaration,
  work: (statements: ReadStatements) => Promise<T>,
  options: LightReadOptions,
) {
  const limits = options.costly ? organizationLimits(knex) : undefined;
  const costlyTimeoutMs = limits?.costlyStatementTimeoutMs;
  const begin = beginDeclaring(declaration, ' READ ONLY', costlyTimeoutMs);
  const attempt = readWithRetry(async () => {
    const client = clientOf(knex);
    const connection = (await client.acquireConnection()) as RawConnection;
    const statements = statementsOn(knex, connection);
    let committed: Promise<unknown> | undefined;
    const run: ReadStatements = !options.oneStatement
      ? statements
      : <R>(...args: Parameters<ReadStatements>) => {
          if (committed) return Promise.reject<{ rows: R[] }>(new Error('a one-statement read ran a second statement'));
          const answer = statements<R>(...args);
          committed = connection.query({ text: 'COMMIT' });
          // Awaited below once the work is done; a dropped connection rejects both, and the work's error is the one told.
          committed.catch(() => undefined);
          return answer;
        };
    try {
      // The first statement goes out behind BEGIN, not after its answer (the pool's connections pipeline: db.ts). A
      // BEGIN that failed fails the read, whatever its statements answered without the declaration.
      const [, result] = await Promise.all([connection.query({ text: begin }), work(run)]);
      await (committed ?? connection.query({ text: 'COMMIT' }));
      return result;
    } catch (err) {
      // A dropped session retires its connection; any other failure rolls back (harmless when nothing is open), and a
      // connection that cannot even roll back is retired too: the pool never hands out one inside a transaction.
      if (isDroppedConnection(err)) connection.__knex__disposed ??= err;
      else
        await connection.query({ text: 'ROLLBACK' }).catch((rollbackError: unknown) => {
          connection.__knex__disposed ??= rollbackError;
        });
      throw err;
    } finally {
      await client.releaseConnection(connection);
    }
  }, droppedReadAttempts(knex));
  if (costlyTimeoutMs === undefined) return attempt;
  return attempt.catch((err: unknown) => {
    if ((err as { code?: unknown }).code !== QUERY_CANCELED) throw err;
    limits?.costlyCancelled?.(declaration.value);
    throw queryTooCostly(costlyTimeoutMs);
  });
}

/** The organization a policy admits: the transaction's declared one (NULL when it declared none). */
const DECLARED = `nullif(current_setting('${ORGANIZATION_SETTING}', true), '')::bigint`;
const ACROSS = `coalesce(current_setting('${ALL_ORGANIZATIONS_SETTING}', true), '') = 'on'`;

/**
 * The statements (for a migration) that put a table under organization isolation: row-level security enabled and
 * forced, one policy for reads and writes. The table needs a NOT NULL `organization_id bigint` column.
 */
export function organizationIsolationStatements(table: string): string[] {
  if (!/^[a-z_][a-z0-9_]*$/.test(table)) throw new Error(`not a plain table name: ${table}`);
  const admitted = `(organization_id = ${DECLARED} OR ${ACROSS})`;
  return [
    `ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY`,
    `ALTER TABLE ${table} FORCE ROW LEVEL SECURITY`,
    `DROP POLICY IF EXISTS organization_isolation ON ${table}`,
    `CREATE POLICY organization_isolation ON ${table} USING ${admitted} WITH CHECK ${admitted}`,
  ];
}

/** The reverse of organizationIsolationStatements (a migration's down). */
export function dropOrganizationIsolationStatements(table: string): string[] {
  return [
    `DROP POLICY IF EXISTS organization_isolation ON ${table}`,
    `ALTER TABLE ${table} NO FORCE ROW LEVEL SECURITY`,
    `ALTER TABLE ${table} DISABLE ROW LEVEL SECURITY`,
  ];
}

/**
 * The statements (for a migration) that add a foreign key (`definition`: `FOREIGN KEY (…) REFERENCES …`) to a table
 * that already holds rows, such as the composite keys that keep a row in its parent's organization: added NOT VALID,
 * then validated, so checking the existing rows does not block writes.
 */
export function foreignKeyStatements(table: string, constraint: string, definition: string): string[] {
  return [
    `ALTER TABLE ${table} ADD CONSTRAINT ${constraint} ${definition} NOT VALID`,
    `ALTER TABLE ${table} VALIDATE CONSTRAINT ${constraint}`,
  ];
}

/** A column default that takes the transaction's declared organization: inserts need not name it. */
export const DECLARED_ORGANIZATION_DEFAULT = DECLARED;

/**
 * The role of `knex`'s connections when no row-level security policy applies to it (a superuser or a BYPASSRLS role:
 * PostgreSQL skips every policy for them, FORCE or not), undefined when the policies apply. A service running as such a
 * role keeps its own organization filters but loses the second wall; the service says so at start (runService).
 */
export async function roleBypassingPolicies(knex: Knex): Promise<string | undefined> {
  const { rows } = await knex.raw<{ rows: { role: string; bypasses: boolean }[] }>(
    'SELECT rolname AS role, rolsuper OR rolbypassrls AS bypasses FROM pg_roles WHERE rolname = current_user',
  );
  return rows[0]?.bypasses ? rows[0].role : undefined;
}
