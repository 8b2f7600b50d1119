import type { drivesV1, groupsV1 } from '@mileage/proto';
import {
  inCallOrganization,
  readInCallOrganization,
  type Knex,
  type LightReadOptions,
} from '@mileage/runtime/database';
import { errors, type CallContext, type PromiseClient } from '@mileage/runtime/grpc';
import { millisToTimestamp, timestampToDate } from '@mileage/runtime/formats';
import type { ArchiveStore } from '@mileage/runtime/storage';
import type { Logger } from '@mileage/runtime/telemetry';
import { DEFAULT_TOMBSTONE_RETENTION_DAYS, DriveReads, DrivesRepository } from './drives-repo';
import { positionSurvives, RestoreEpochs } from './restore-epoch';

export interface DrivesServerDeps {
  knex: Knex;
  /** The Groups service: a drive is reported only to a group of its organization. */
  groups: PromiseClient<groupsV1.GroupsServiceClient>;
  /** How long tombstones are kept (TOMBSTONE_RETENTION_DAYS, default 90). */
  tombstoneRetentionDays?: number;
  /** The database's restore epoch (made over knex when not given). */
  restoreEpochs?: RestoreEpochs;
  /** Where its part of an organization export goes; none: exports are off. */
  archives?: ArchiveStore;
  /** The share of the wall time its export part works (EXPORT_DUTY_CYCLE; default DEFAULT_EXPORT_DUTY_CYCLE). */
  exportDutyCycle?: number;
  /** The service's log: an export part's worker that could not enter the idle scheduling class says so there. */
  logger?: Logger;
  /** Counts each export part's worker by the scheduling class it ran in (exportWorkerCounter). */
  countExportWorker?: (idle: boolean) => void;
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
  /**
   * The epoch a page is read in; FAILED_PRECONDITION (RESYNC_REQUIRED) when the position it continues from was read
   * after the restore point of a later epoch (CONTRACT §8).
   */
  epochOfPage(position: drivesV1.PagePosition | undefined): Promise<string>;
}

export function callOrganization(deps: DrivesServerDeps): CallOrganization {
  const retentionDays = deps.tombstoneRetentionDays ?? DEFAULT_TOMBSTONE_RETENTION_DAYS;
  const restoreEpochs = deps.restoreEpochs ?? new RestoreEpochs(deps.knex);
  return {
    async epochOfPage(position) {
      const { current, history } = await restoreEpochs.view();
      const readAt = position?.readTime ? timestampToDate(position.readTime) : new Date(0);
      if (position?.restoreEpoch && !positionSurvives(history, current, position.restoreEpoch, readAt))
        throw errors.failedPrecondition(
          'The database was restored to a point in time before this cursor was made: what it continued from may be ' +
            'gone. Start a full sync: list without cursor and date_after, and replace your copy.',
          'RESYNC_REQUIRED',
        );
      return current;
    },
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

/** What every list answer ends with: where the next page starts, in which restore epoch and when it was read. */
export function pageEnd(
  page: { hasMore: boolean; next?: Pick<drivesV1.PagePosition, 'sortTime' | 'id'> },
  restoreEpoch: string,
) {
  return {
    hasMore: page.hasMore,
    ...(page.next ? { nextPosition: { ...page.next, restoreEpoch, readTime: millisToTimestamp(Date.now()) } } : {}),
  };
}
