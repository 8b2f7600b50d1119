import {
  readAcrossOrganizations,
  readInOrganization,
  type Knex,
  type LightReadOptions,
  type ReadStatements,
} from '@mileage/runtime/database';
import { type CallContext } from '@mileage/runtime/grpc';
import type { ArchiveStore } from '@mileage/runtime/storage';
import { ANY_ORGANIZATION, type UserScope } from './users-repo';

export interface UsersServerDeps {
  knex: Knex;
  /** Days after an erasure until no backup holds the data (ERASURE_BACKUPS_HOLD_DAYS; 32 when unset). */
  erasureBackupsHoldDays?: number;
  /** Where organization exports' archives are kept (DATA_DIR, or object storage); none: exports are off. */
  archives?: ArchiveStore;
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
  const { organizationId } = ctx;
  return organizationId === undefined
    ? readAcrossOrganizations(deps.knex, (run) => work(run, ANY_ORGANIZATION), options)
    : readInOrganization(deps.knex, organizationId, (run) => work(run, organizationId), options);
}
