import {
  callOrganization,
  inOrganization,
  readAcrossOrganizations,
  readInOrganization,
  droppedReadAttempts,
  readWithRetry,
  requireOrganization,
  type CallContext,
  type Knex,
  type LightReadOptions,
  type ReadStatements,
} from '@mileage/runtime';
import { ANY_ORGANIZATION, type UserScope } from './users-repo';

export interface UsersServerDeps {
  knex: Knex;
}

/**
 * Runs `work` in the transaction of the call's organization (FAILED_PRECONDITION ORGANIZATION_REQUIRED when the call
 * names none): it sees and writes only that organization's rows. A read (`read: true`) whose connection turns out to
 * have been dropped runs again, on another (readWithRetry).
 */
export function inCallOrganization<T>(
  deps: UsersServerDeps,
  ctx: CallContext,
  work: (trx: Knex.Transaction, organizationId: number) => Promise<T>,
  options: { read?: boolean } = {},
): Promise<T> {
  const organizationId = requireOrganization(ctx);
  const run = () => inOrganization(deps.knex, organizationId, (trx) => work(trx, organizationId));
  return options.read ? readWithRetry(run, droppedReadAttempts(deps.knex)) : run();
}

/**
 * Runs the statements of a read inside the call's organization as a light read (readInOrganization: the hot reads);
 * FAILED_PRECONDITION ORGANIZATION_REQUIRED when the call names none.
 */
export function readInCallOrganization<T>(
  deps: UsersServerDeps,
  ctx: CallContext,
  work: (statements: ReadStatements, organizationId: number) => Promise<T>,
  options?: LightReadOptions,
): Promise<T> {
  const organizationId = requireOrganization(ctx);
  return readInOrganization(deps.knex, organizationId, (run) => work(run, organizationId), options);
}

/**
 * Runs the statements of a read of users inside the call's organization, or, for a call that names none (the gateway
 * loading its verified callers, whose organizations the answer tells), across organizations: the one read of users
 * the service answers so.
 */
export function readInCallScope<T>(
  deps: UsersServerDeps,
  ctx: CallContext,
  work: (statements: ReadStatements, scope: UserScope) => Promise<T>,
  options?: LightReadOptions,
): Promise<T> {
  const organizationId = callOrganization(ctx);
  return organizationId === undefined
    ? readAcrossOrganizations(deps.knex, (run) => work(run, ANY_ORGANIZATION), options)
    : readInOrganization(deps.knex, organizationId, (run) => work(run, organizationId), options);
}
