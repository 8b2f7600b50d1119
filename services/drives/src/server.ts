import { status } from '@grpc/grpc-js';
import { drivesV1, type groupsV1 } from '@mileage/proto';
import {
  COSTLY_READ,
  errors,
  inOrganization,
  millisToTimestamp,
  readInOrganization,
  requireOrganization,
  type CallContext,
  type Handlers,
  type Knex,
  type LightReadOptions,
  type PromiseClient,
  type ServiceRegistration,
  timestampToDate,
} from '@mileage/runtime';
import { DEFAULT_TOMBSTONE_RETENTION_DAYS, DriveReads, DrivesRepository } from './drives-repo';
import { renderReportedRows, renderUserDriveRows } from './render';
import { positionSurvives, RestoreEpochs } from './restore-epoch';
import { toDrive, toReported } from './rows';
import { classificationFilter, listQuery, requirePositive, requireUserId, validateDrive } from './validation';

export interface DrivesServerDeps {
  knex: Knex;
  /** The Groups service: a drive is reported only to a group of its organization. */
  groups: PromiseClient<groupsV1.GroupsServiceClient>;
  /** How long tombstones are kept (TOMBSTONE_RETENTION_DAYS, default 90). */
  tombstoneRetentionDays?: number;
  /** The database's restore epoch (made over knex when not given). */
  restoreEpochs?: RestoreEpochs;
}

const NOTHING = Buffer.alloc(0);

/** What every list answer ends with: where the next page starts, in which restore epoch and when it was read. */
function pageEnd(
  page: { hasMore: boolean; next?: Pick<drivesV1.PagePosition, 'sortTime' | 'id'> },
  restoreEpoch: string,
) {
  return {
    hasMore: page.hasMore,
    ...(page.next ? { nextPosition: { ...page.next, restoreEpoch, readTime: millisToTimestamp(Date.now()) } } : {}),
  };
}

/** The DrivesService handlers over the given database; process wiring lives in main.ts. */
export function createServer(deps: DrivesServerDeps): ServiceRegistration {
  const retentionDays = deps.tombstoneRetentionDays ?? DEFAULT_TOMBSTONE_RETENTION_DAYS;
  const restoreEpochs = deps.restoreEpochs ?? new RestoreEpochs(deps.knex);
  /**
   * The epoch a page is read in; FAILED_PRECONDITION (RESYNC_REQUIRED) when the position it continues from was read
   * after the restore point of a later epoch (CONTRACT §8).
   */
  const epochOfPage = async (position: drivesV1.PagePosition | undefined): Promise<string> => {
    const { current, history } = await restoreEpochs.view();
    if (
      position?.restoreEpoch &&
      !positionSurvives(
        history,
        current,
        position.restoreEpoch,
        position.readTime ? timestampToDate(position.readTime) : new Date(0),
      )
    )
      throw errors.failedPrecondition(
        'The database was restored to a point in time before this cursor was made: what it continued from may be ' +
          'gone. Start a full sync: list without cursor and date_after, and replace your copy.',
        'RESYNC_REQUIRED',
      );
    return current;
  };
  /** `work` over the repository of the call's organization, in one transaction that declared it (inOrganization). */
  const inCallOrganization = <T>(ctx: CallContext, work: (repo: DrivesRepository) => Promise<T>): Promise<T> => {
    const organizationId = requireOrganization(ctx);
    return inOrganization(deps.knex, organizationId, (trx) => work(new DrivesRepository(trx, organizationId)));
  };
  /**
   * A read: its statements in one READ ONLY transaction that declared the call's organization, on pg directly (a
   * light read: its BEGIN shares a round trip with the first statement, no knex transaction); run again while its
   * connection turns out dropped (nothing was written).
   */
  const read = <T>(
    ctx: CallContext,
    work: (reads: DriveReads) => Promise<T>,
    options?: LightReadOptions,
  ): Promise<T> => {
    const organizationId = requireOrganization(ctx);
    return readInOrganization(
      deps.knex,
      organizationId,
      (run) => work(new DriveReads(run, organizationId, retentionDays)),
      options,
    );
  };

  const handlers: Handlers<drivesV1.DrivesServiceServer> = {
    async listUserDrives(request, ctx) {
      requireUserId(request.userId);
      const classification = classificationFilter(request.classification);
      const query = listQuery(request);
      const epoch = await epochOfPage(request.afterPosition);
      // A page (up to 1,000 drives) under the costly statement timeout.
      const page = await read(
        ctx,
        (reads) => reads.listUserDrives(request.userId, classification, query, ctx.trace),
        COSTLY_READ,
      );
      // Rendered here, the page crosses the hop as one field of bytes that the gateway passes through.
      return request.renderJson
        ? {
            drives: [],
            tombstones: [],
            resultsJson: renderUserDriveRows(page.rows, page.tombstones),
            ...pageEnd(page, epoch),
          }
        : {
            drives: page.rows.map(toDrive),
            tombstones: page.tombstones,
            resultsJson: NOTHING,
            ...pageEnd(page, epoch),
          };
    },

    async listReportedDrives(request, ctx) {
      if (request.groupIds.length === 0 || request.groupIds.length > 1000) {
        throw errors.invalidArgument('1 to 1000 group ids', [
          { field: 'group_ids', description: '1 to 1000 group ids' },
        ]);
      }
      request.groupIds.forEach((id, i) => requirePositive(id, `group_ids[${i}]`));
      const query = listQuery(request);
      const epoch = await epochOfPage(request.afterPosition);
      const page = await read(
        ctx,
        (reads) => reads.listReportedDrives(request.groupIds, query, ctx.trace),
        COSTLY_READ,
      );
      return request.renderJson
        ? {
            reportedDrives: [],
            tombstones: [],
            ...renderReportedRows(page.reported, page.tombstones),
            ...pageEnd(page, epoch),
          }
        : {
            reportedDrives: page.reported.map(({ row, comments }) => toReported(row, comments)),
            tombstones: page.tombstones,
            resultsJson: NOTHING,
            driverSlots: [],
            ...pageEnd(page, epoch),
          };
    },

    async createDrive(request, ctx) {
      const drive = validateDrive(request.drive, { idRequired: false });
      return { drive: await inCallOrganization(ctx, (repo) => repo.create(drive, ctx.trace)) };
    },

    async updateDrive(request, ctx) {
      const drive = validateDrive(request.drive, { idRequired: true });
      return { drive: await inCallOrganization(ctx, (repo) => repo.update(drive, ctx.trace)) };
    },

    async reportDrive(request, ctx) {
      requirePositive(request.driveId, 'drive_id');
      requirePositive(request.groupId, 'group_id');
      const organizationId = requireOrganization(ctx);
      const driver = await read(ctx, (reads) => reads.driverOf(request.driveId, ctx.trace));
      // The drive is of the call's organization (found in it): the group must be too. Asked before the report's
      // transaction, which holds no lock while another service answers.
      const { exists } = await deps.groups
        .checkGroupAdmin(
          { groupId: request.groupId, userId: driver },
          { organizationId, requestId: ctx.requestId, ...(ctx.trace ? { trace: ctx.trace } : {}) },
        )
        .catch((err: { code?: unknown }) => {
          // Not knowing the group's organization, nothing is reported: the caller may try again.
          if (err.code === status.UNAVAILABLE || err.code === status.DEADLINE_EXCEEDED)
            throw errors.unavailable('the Groups service is unavailable', 'GROUPS_UNAVAILABLE');
          throw err;
        });
      if (!exists)
        throw errors.failedPrecondition(
          `group ${request.groupId} is not a group of the drive's organization`,
          'GROUP_OF_ANOTHER_ORGANIZATION',
        );
      return {
        reportedDrive: await inCallOrganization(ctx, (repo) =>
          repo.report(request.driveId, request.groupId, ctx.trace),
        ),
      };
    },

    async reviewReportedDrive(request, ctx) {
      requirePositive(request.driveId, 'drive_id');
      if (!/^[a-z_]{1,32}$/.test(request.status))
        throw errors.invalidArgument('invalid status', [{ field: 'status', description: '1–32 of [a-z_]' }]);
      if (request.comment.length > 4000)
        throw errors.invalidArgument('comment too long', [
          { field: 'comment', description: 'at most 4000 characters' },
        ]);
      if (request.comment && !request.reviewerEmail)
        throw errors.invalidArgument('reviewer_email is required with a comment', [
          { field: 'reviewer_email', description: 'required' },
        ]);
      return {
        reportedDrive: await inCallOrganization(ctx, (repo) =>
          repo.review(request.driveId, request.status, request.comment, request.reviewerEmail, ctx.trace),
        ),
      };
    },

    async deleteDrive(request, ctx) {
      requirePositive(request.driveId, 'drive_id');
      requireUserId(request.userId);
      const { tombstone, withdrawnGroupId } = await inCallOrganization(ctx, (repo) =>
        repo.deleteDrive(request.driveId, request.userId, ctx.trace),
      );
      return { tombstone, withdrawnGroupId };
    },

    async withdrawReport(request, ctx) {
      requirePositive(request.driveId, 'drive_id');
      requireUserId(request.userId);
      return {
        tombstone: await inCallOrganization(ctx, (repo) =>
          repo.withdrawReport(request.driveId, request.userId, ctx.trace),
        ),
      };
    },
  };

  return { definition: drivesV1.DrivesServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}
