import { inOrganization, readWithRetry, requireOrganization, type CallContext, type Knex } from '@mileage/runtime';

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
