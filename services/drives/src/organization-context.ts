import type { drivesV1, groupsV1 } from '@mileage/proto';
import {
  inCallOrganization,
  readInCallOrganization,
  type Knex,
  type LightReadOptions,
} from '@mileage/runtime/database';
import { type CallContext, type PromiseClient } from '@mileage/runtime/grpc';
import type { ArchiveStore } from '@mileage/runtime/storage';
import { DEFAULT_TOMBSTONE_RETENTION_DAYS, DriveReads, DrivesRepository } from './drives-repo';

export interface DrivesServerDeps {
  knex: Knex;
  /** The Groups service: a drive is reported only to a group of its organization. */
  groups: PromiseClient<groupsV1.GroupsServiceClient>;
  /** How long tombstones are kept (TOMBSTONE_RETENTION_DAYS, default 90). */
  tombstoneRetentionDays?: number;
  /** Where its part of an organization export goes; none: exports are off. */
  archives?: ArchiveStore;
}

/** How the handlers reach the drives of the call's organization: writes and reads. */
export interface CallOrganization {
  /** `work` over the repository of the call's organization, in one transaction that declared it (inCallOrganization). */
  write<T>(ctx: CallContext, work: (repo: DrivesRepository) => Promise<T>): Promise<T>;
  /**
   * A read: its statements in one READ ONLY transaction that declared the call's organization, on pg directly (a
   * light read: its BEGIN shares a round trip with the first statement, no knex transaction); run again while its
   * connection turns out dropped (nothing was written).
   */
  read<T>(ctx: CallContext, work: (reads: DriveReads) => Promise<T>, options?: LightReadOptions): Promise<T>;
}

export function callOrganization(deps: DrivesServerDeps): CallOrganization {
  const retentionDays = deps.tombstoneRetentionDays ?? DEFAULT_TOMBSTONE_RETENTION_DAYS;
  return {
    write: (ctx, work) =>
      inCallOrganization(deps.knex, ctx, (trx, organizationId) => work(new DrivesRepository(trx, organizationId))),
    read: (ctx, work, options) =>
      readInCallOrganization(
        deps.knex,
        ctx,
        (run, organizationId) => work(new DriveReads(run, organizationId, retentionDays)),
        options,
      ),
  };
}

/** An empty resultsJson: the answer carries messages. */
export const NOTHING = Buffer.alloc(0);

/** What every list answer ends with: where the next page starts. */
export function pageEnd(page: { hasMore: boolean; next?: drivesV1.PagePosition }) {
  return { hasMore: page.hasMore, ...(page.next ? { nextPosition: page.next } : {}) };
}
