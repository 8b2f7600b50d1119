import { inCallOrganization, type Knex } from '@mileage/runtime/database';
import { type CallContext } from '@mileage/runtime/grpc';
import type { ArchiveStore } from '@mileage/runtime/storage';
import { GroupsRepository } from './groups-repo';

export interface GroupsServerDeps {
  knex: Knex;
  /** Where its part of an organization export goes; none: exports are off. */
  archives?: ArchiveStore;
  /** Public URL of /scim/v2 (SCIM_BASE_URL): `meta.location` and the members' `$ref` in an export. */
  scimBaseUrl?: string;
}

/** How the handlers reach the groups of the call's organization: writes and reads. */
export interface CallOrganization {
  /** `work` over the repository of the call's organization, in one transaction that declared it (inCallOrganization). */
  write<T>(ctx: CallContext, work: (repo: GroupsRepository) => Promise<T>): Promise<T>;
  /** The same for a read: run again while its connection turns out dropped (nothing was written). */
  read<T>(ctx: CallContext, work: (repo: GroupsRepository) => Promise<T>): Promise<T>;
}

export function callOrganization(deps: GroupsServerDeps): CallOrganization {
  const repository =
    <T>(work: (repo: GroupsRepository) => Promise<T>) =>
    (trx: Knex.Transaction, id: number) =>
      work(new GroupsRepository(trx, id));
  return {
    write: (ctx, work) => inCallOrganization(deps.knex, ctx, repository(work)),
    read: (ctx, work) => inCallOrganization(deps.knex, ctx, repository(work), { read: true }),
  };
}
