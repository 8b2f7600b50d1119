import {
  inOrganization,
  readInOrganization,
  readWithRetry,
  requireOrganization,
  type CallContext,
  type Knex,
  type ReadStatements,
} from '@mileage/runtime';

export interface UsersServerDeps {
  knex: Knex;
}

/**
 * Runs `work` in the transaction of the call's organization (FAILED_PRECONDITION ORGANIZATION_REQUIRED when the call
 * names none): it sees and writes only that organization's rows. A read (`read: true`) whose connection turns out to
 * have been dropped runs once more, on a fresh one (readWithRetry).
 */
export function inCallOrganization<T>(
  deps: UsersServerDeps,
  ctx: CallContext,
  work: (trx: Knex.Transaction, organizationId: number) => Promise<T>,
  options: { read?: boolean } = {},
): Promise<T> {
  const organizationId = requireOrganization(ctx);
  const run = () => inOrganization(deps.knex, organizationId, (trx) => work(trx, organizationId));
  return options.read ? readWithRetry(run) : run();
}

/**
 * Runs the statements of a read in a READ ONLY transaction of the call's organization without a knex transaction
 * (readInOrganization: the hot reads), retried once on a dropped connection.
 */
export function readInCallOrganization<T>(
  deps: UsersServerDeps,
  ctx: CallContext,
  work: (statements: ReadStatements, organizationId: number) => Promise<T>,
): Promise<T> {
  const organizationId = requireOrganization(ctx);
  return readWithRetry(() => readInOrganization(deps.knex, organizationId, (run) => work(run, organizationId)));
}
