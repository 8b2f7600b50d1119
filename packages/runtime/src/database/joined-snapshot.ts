import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { type BinaryRows, columnTypes, copyBinaryRows, copyOutRows, type CopiedRows } from './copy-out';
import { ORGANIZATION_SETTING } from './organization-setting';
import type { ReadStatements } from './tenancy';
import type { PageBytes } from '../storage/part';

/**
 * What another connection needs to read exactly what a running REPEATABLE READ transaction of an organization reads
 * (snapshotInOrganization's): the database, the exported snapshot, the organization it declared and the settings its
 * statements run under. Plain data, so it can be handed to a worker thread.
 */
export interface SnapshotTicket {
  connectionString: string;
  applicationName?: string;
  snapshot: string;
  organizationId: number;
  searchPath: string;
  statementTimeout: string;
}

/** pg_export_snapshot()'s identifiers: hexadecimal parts and a number, nothing else (it is written into a statement). */
const SNAPSHOT_ID = /^[0-9A-F]+-[0-9A-F]+-[0-9]+$/i;

/**
 * Exports the snapshot of `trx`, a transaction of `organizationId` opened by snapshotInOrganization on `knex`: valid while
 * `trx` stays open, so the caller keeps it open until every connection that joined it is done.
 */
export async function shareSnapshot(
  knex: Knex,
  trx: Knex.Transaction,
  organizationId: number,
): Promise<SnapshotTicket> {
  const connection = knex.client.config.connection as { connectionString?: string; application_name?: string };
  if (typeof connection?.connectionString !== 'string')
    throw new Error('a snapshot is shared only by a database opened from a URL (createDatabase)');
  const { rows } = (await trx.raw(
    `SELECT pg_export_snapshot() AS snapshot, current_setting('search_path') AS search_path,
            current_setting('statement_timeout') AS statement_timeout`,
  )) as { rows: { snapshot: string; search_path: string; statement_timeout: string }[] };
  const [row] = rows;
  return {
    connectionString: connection.connectionString,
    ...(connection.application_name ? { applicationName: connection.application_name } : {}),
    snapshot: row!.snapshot,
    organizationId,
    searchPath: row!.search_path,
    statementTimeout: row!.statement_timeout,
  };
}

/** knex's pg client, for its conversion of placeholders only (no connection: it never queries); made on first use. */
let placeholders: { positionBindings(text: string): string } | undefined;

/** knex's `?` placeholders as pg's `$n` (`\?` is a literal question mark), by knex's own conversion (statementsOf's). */
export function positionalText(text: string): string {
  placeholders ??= knexFactory({ client: 'pg' }).client as { positionBindings(text: string): string };
  return placeholders.positionBindings(text);
}

/** A connection that joined a snapshot (joinSnapshot): its statements, its COPY's rows (copyOutRows), and its end. */
export interface JoinedSnapshot {
  run: ReadStatements;
  copyRows(query: string, into?: PageBytes): Promise<CopiedRows>;
  copyBinaryRows(query: string, into?: PageBytes): Promise<BinaryRows>;
  /** The type of each column of `query`'s result (PostgreSQL's type OIDs), from its description: nothing is read. */
  columnTypes(query: string): Promise<number[]>;
  close(): Promise<void>;
}

/**
 * A connection of its own that reads the snapshot `ticket` names, declared as its organization (row-level security)
 * with the sharing transaction's search path and statement timeout: its statements see what the sharer's would.
 * `close` ends it; a connection that is simply dropped (its worker stopped) ends its transaction with it.
 */
export async function joinSnapshot(ticket: SnapshotTicket): Promise<JoinedSnapshot> {
  if (!SNAPSHOT_ID.test(ticket.snapshot)) throw new Error('not a snapshot identifier');
  const client = new pg.Client({
    connectionString: ticket.connectionString,
    ...(ticket.applicationName ? { application_name: ticket.applicationName } : {}),
  });
  await client.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await client.query(`SET TRANSACTION SNAPSHOT '${ticket.snapshot}'`);
    await client.query(
      `SELECT set_config($1, $2, true), set_config('search_path', $3, true), set_config('statement_timeout', $4, true)`,
      [ORGANIZATION_SETTING, String(ticket.organizationId), ticket.searchPath, ticket.statementTimeout],
    );
  } catch (err) {
    await client.end().catch(() => {});
    throw err;
  }
  const texts = new Map<string, string>();
  const run: ReadStatements = async (text, bindings = [], name, types) => {
    let positional = texts.get(text);
    if (positional === undefined) texts.set(text, (positional = positionalText(text)));
    return (await client.query({
      text: positional,
      values: [...bindings],
      ...(name ? { name } : {}),
      ...(types ? { types } : {}),
    })) as { rows: never[] };
  };
  return {
    run,
    copyRows: (query, into) => copyOutRows(client, query, into),
    copyBinaryRows: (query, into) => copyBinaryRows(client, query, into),
    columnTypes: (query) => columnTypes(client, query),
    async close() {
      try {
        await client.query('COMMIT');
      } finally {
        await client.end();
      }
    },
  };
}
