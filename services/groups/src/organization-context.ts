import {
  droppedReadAttempts,
  inOrganization,
  readWithRetry,
  requireOrganization,
  type CallContext,
  type Knex,
} from '@mileage/runtime';
import { GroupsRepository } from './groups-repo';

export interface GroupsServerDeps {
  knex: Knex;
}

/** How the handlers reach the groups of the call's organization: writes and reads. */
export interface CallOrganization {
  /** `work` over the repository of the call's organization, in one transaction that declared it (inOrganization). */
  write<T>(ctx: CallContext, work: (repo: GroupsRepository) => Promise<T>): Promise<T>;
  /** The same for a read: run again while its connection turns out dropped (nothing was written). */
  read<T>(ctx: CallContext, work: (repo: GroupsRepository) => Promise<T>): Promise<T>;
}

export function callOrganization(deps: GroupsServerDeps): CallOrganization {
  const write = <T>(ctx: CallContext, work: (repo: GroupsRepository) => Promise<T>): Promise<T> => {
    const organizationId = requireOrganization(ctx);
    return inOrganization(deps.knex, organizationId, (trx) => work(new GroupsRepository(trx, organizationId)));
  };
  return {
    write,
    read: (ctx, work) => readWithRetry(() => write(ctx, work), droppedReadAttempts(deps.knex)),
  };
}
