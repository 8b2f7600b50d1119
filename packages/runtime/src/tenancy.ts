import type { Knex } from 'knex';
import type { CallContext } from './grpc-server';
import { errors } from './errors';

/**
 * Organizations (customer companies) share one installation; the database keeps them apart. Every tenant row has an
 * `organization_id`, and PostgreSQL row-level security (FORCE: the table's owner too) shows a transaction only the rows
 * of the organization it declared with `SET LOCAL mileage.organization_id`. A query that forgets its own organization
 * filter therefore still finds only that organization's rows, and a transaction that declared none finds nothing.
 *
 * The organization travels between processes as `x-mileage-organization` metadata (CallSettings.organizationId), like
 * the request id; a service reads it with `callOrganization(ctx)`.
 */
export const ORGANIZATION_METADATA_KEY = 'x-mileage-organization';
/** The transaction setting the policies compare with. */
export const ORGANIZATION_SETTING = 'mileage.organization_id';
/** Set (to 'on') only by `acrossOrganizations`: the named system work that must see every organization. */
export const ALL_ORGANIZATIONS_SETTING = 'mileage.all_organizations';

const ORGANIZATION_ID_PATTERN = /^[1-9][0-9]{0,15}$/;

/** A positive integer organization id that fits a JavaScript number and a bigint. */
export function isOrganizationId(value: unknown): boolean {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0;
  return typeof value === 'string' && ORGANIZATION_ID_PATTERN.test(value);
}

/** The organization of a gRPC call (its `x-mileage-organization` metadata), undefined when it carries none. */
export function callOrganization(ctx: Pick<CallContext, 'metadata'>): number | undefined {
  const values = ctx.metadata.get(ORGANIZATION_METADATA_KEY);
  if (values.length === 0) return undefined;
  const [value] = values;
  if (values.length > 1 || typeof value !== 'string' || !ORGANIZATION_ID_PATTERN.test(value))
    throw errors.invalidArgument(`${ORGANIZATION_METADATA_KEY} must be one positive integer`, [
      { field: ORGANIZATION_METADATA_KEY, description: 'invalid organization id' },
    ]);
  return Number(value);
}

/** The organization of a call that must act inside one: FAILED_PRECONDITION when the caller sent none. */
export function requireOrganization(ctx: Pick<CallContext, 'metadata'>): number {
  const organizationId = callOrganization(ctx);
  if (organizationId === undefined)
    throw errors.failedPrecondition(
      `this call acts inside an organization: send ${ORGANIZATION_METADATA_KEY}`,
      'ORGANIZATION_REQUIRED',
    );
  return organizationId;
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
  if (!isOrganizationId(organizationId)) throw new Error(`not an organization id: ${String(organizationId)}`);
  return knex.transaction(async (trx) => {
    await trx.raw('SELECT set_config(?, ?, true)', [ORGANIZATION_SETTING, String(organizationId)]);
    return work(trx);
  });
}

/**
 * Runs `work` in one transaction that sees every organization: only for system work that is by nature across them
 * (outbox relays, the webhook worker, resolving a SCIM token or a caller to their organization, seeding). Every use is
 * a named exception; nothing reaches it from a request's own filters.
 */
export async function acrossOrganizations<T>(knex: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return knex.transaction(async (trx) => {
    await trx.raw('SELECT set_config(?, ?, true)', [ALL_ORGANIZATIONS_SETTING, 'on']);
    return work(trx);
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
