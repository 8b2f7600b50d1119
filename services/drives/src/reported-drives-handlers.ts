import { status } from '@grpc/grpc-js';
import type { drivesV1 } from '@mileage/proto';
import { COSTLY_READ } from '@mileage/runtime/database';
import { errors, type Handlers, requireOrganization } from '@mileage/runtime/grpc';
import { requireUserId } from '@mileage/runtime/formats';
import { NOTHING, pageEnd, type CallOrganization, type DrivesServerDeps } from './organization-context';
import { renderReportedRows } from './render';
import { toReported } from './rows';
import { listQuery, requirePositive } from './validation';

type ReportedDriveHandlers = Pick<
  Handlers<drivesV1.DrivesServiceServer>,
  'listReportedDrives' | 'reportDrive' | 'reviewReportedDrive' | 'withdrawReport'
>;

/** Drives reported to a group: their pages, reporting one, its review and its withdrawal. */
export function reportedDriveHandlers(
  { read, write, epochOfPage }: CallOrganization,
  deps: Pick<DrivesServerDeps, 'groups'>,
): ReportedDriveHandlers {
  return {
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
        reportedDrive: await write(ctx, (repo) => repo.report(request.driveId, request.groupId, ctx.trace)),
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
        reportedDrive: await write(ctx, (repo) =>
          repo.review(request.driveId, request.status, request.comment, request.reviewerEmail, ctx.trace),
        ),
      };
    },

    async withdrawReport(request, ctx) {
      requirePositive(request.driveId, 'drive_id');
      requireUserId(request.userId);
      return {
        tombstone: await write(ctx, (repo) => repo.withdrawReport(request.driveId, request.userId, ctx.trace)),
      };
    },
  };
}
