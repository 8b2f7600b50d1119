import type { Knex } from 'knex';

/**
 * knex's PostgreSQL client, with transactions that may begin with a declaration: `BEGIN; SELECT set_config(…)` sent
 * as one simple query instead of two round trips (inOrganization, acrossOrganizations). knex has no typed hook for
 * the BEGIN it sends, so this extends its internal PostgreSQL client and transaction classes (knex 3.x); when they are
 * not what this expects, createDatabase uses knex's own client and the declaration is a statement of its own.
 */

/** The transaction config field that carries the statements a transaction begins with (they include BEGIN). */
export const BEGIN_WITH = Symbol('mileage.beginWith');

interface PgTransactionInstance {
  query(connection: unknown, sql: string): Promise<unknown>;
  begin(connection: unknown): Promise<unknown>;
}
type PgTransactionClass = new (
  client: unknown,
  container: unknown,
  config: unknown,
  outerTx: unknown,
) => PgTransactionInstance;
type PgClientClass = new (config: Knex.Config) => { transaction(...args: unknown[]): unknown };

function load(): PgClientClass | undefined {
  try {
    /* eslint-disable @typescript-eslint/no-require-imports */
    const PgClient = require('knex/lib/dialects/postgres/index.js') as PgClientClass;
    const PgTransaction = require('knex/lib/dialects/postgres/execution/pg-transaction.js') as PgTransactionClass;
    /* eslint-enable @typescript-eslint/no-require-imports */
    if (typeof PgTransaction.prototype.begin !== 'function' || typeof PgTransaction.prototype.query !== 'function')
      return undefined;

    class DeclaringTransaction extends PgTransaction {
      private readonly beginWith: string | undefined;
      constructor(client: unknown, container: unknown, config: unknown, outerTx: unknown) {
        super(client, container, config, outerTx);
        this.beginWith = (config as { [BEGIN_WITH]?: string } | undefined)?.[BEGIN_WITH];
      }
      override begin(connection: unknown): Promise<unknown> {
        return this.beginWith ? this.query(connection, this.beginWith) : super.begin(connection);
      }
    }
    return class DeclaringPgClient extends PgClient {
      override transaction(container: unknown, config: unknown, outerTx: unknown) {
        return new DeclaringTransaction(this, container, config, outerTx);
      }
      declaresOnBegin = true;
    } as PgClientClass;
  } catch {
    return undefined;
  }
}

/** The client class createDatabase gives knex, or undefined when knex's internals are not as expected. */
export const DeclaringPgClient = load() as typeof Knex.Client | undefined;

/** Whether transactions of `knex` send BEGIN_WITH as their BEGIN. */
export function declaresOnBegin(knex: Knex): boolean {
  return (knex.client as { declaresOnBegin?: boolean }).declaresOnBegin === true;
}
