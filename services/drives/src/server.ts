import { drivesV1 } from '@mileage/proto';
import { errors, type Handlers, type Knex, type ServiceRegistration } from '@mileage/runtime';
import { DEFAULT_TOMBSTONE_RETENTION_DAYS, DrivesRepository } from './drives-repo';
import { classificationFilter, listQuery, requirePositive, requireUserId, validateDrive } from './validation';

export interface DrivesServerDeps {
  knex: Knex;
  /** How long tombstones are kept (TOMBSTONE_RETENTION_DAYS, default 90). */
  tombstoneRetentionDays?: number;
}

/** What every list answer ends with: its tombstones and where the next page starts. */
function pageEnd(page: { tombstones: drivesV1.Tombstone[]; hasMore: boolean; next?: drivesV1.PagePosition }) {
  return { tombstones: page.tombstones, hasMore: page.hasMore, ...(page.next ? { nextPosition: page.next } : {}) };
}

/** The DrivesService handlers over the given database; process wiring lives in main.ts. */
export function createServer(deps: DrivesServerDeps): ServiceRegistration {
  const repo = new DrivesRepository(deps.knex, deps.tombstoneRetentionDays ?? DEFAULT_TOMBSTONE_RETENTION_DAYS);

  const handlers: Handlers<drivesV1.DrivesServiceServer> = {
    async listUserDrives(request, ctx) {
      requireUserId(request.userId);
      const page = await repo.listUserDrives(
        request.userId,
        classificationFilter(request.classification),
        listQuery(request),
        ctx.trace,
      );
      return { drives: page.drives, ...pageEnd(page) };
    },

    async listReportedDrives(request, ctx) {
      if (request.groupIds.length === 0 || request.groupIds.length > 1000) {
        throw errors.invalidArgument('1 to 1000 group ids', [
          { field: 'group_ids', description: '1 to 1000 group ids' },
        ]);
      }
      request.groupIds.forEach((id, i) => requirePositive(id, `group_ids[${i}]`));
      const page = await repo.listReportedDrives(request.groupIds, listQuery(request), ctx.trace);
      return { reportedDrives: page.reportedDrives, ...pageEnd(page) };
    },

    async createDrive(request, ctx) {
      return { drive: await repo.create(validateDrive(request.drive, { idRequired: false }), ctx.trace) };
    },

    async updateDrive(request, ctx) {
      return { drive: await repo.update(validateDrive(request.drive, { idRequired: true }), ctx.trace) };
    },

    async reportDrive(request, ctx) {
      requirePositive(request.driveId, 'drive_id');
      requirePositive(request.groupId, 'group_id');
      return { reportedDrive: await repo.report(request.driveId, request.groupId, ctx.trace) };
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
        reportedDrive: await repo.review(
          request.driveId,
          request.status,
          request.comment,
          request.reviewerEmail,
          ctx.trace,
        ),
      };
    },

    async deleteDrive(request, ctx) {
      requirePositive(request.driveId, 'drive_id');
      requireUserId(request.userId);
      const { tombstone, withdrawnGroupId } = await repo.deleteDrive(request.driveId, request.userId, ctx.trace);
      return { tombstone, withdrawnGroupId };
    },

    async withdrawReport(request, ctx) {
      requirePositive(request.driveId, 'drive_id');
      requireUserId(request.userId);
      return { tombstone: await repo.withdrawReport(request.driveId, request.userId, ctx.trace) };
    },
  };

  return { definition: drivesV1.DrivesServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}
