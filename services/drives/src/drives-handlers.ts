import type { drivesV1 } from '@mileage/proto';
import { COSTLY_READ } from '@mileage/runtime/database';
import { requireUserId } from '@mileage/runtime/formats';
import { type Handlers } from '@mileage/runtime/grpc';
import { NOTHING, pageEnd, type CallOrganization } from './organization-context';
import { renderUserDriveRows } from './render';
import { toDrive } from './rows';
import { classificationFilter, listQuery, requirePositive, validateDrive } from './validation';

type DriveHandlers = Pick<
  Handlers<drivesV1.DrivesServiceServer>,
  'listUserDrives' | 'createDrive' | 'updateDrive' | 'deleteDrive'
>;

/** A user's drives: their pages, and creating, changing and deleting one. */
export function driveHandlers({ read, write, epochOfPage }: CallOrganization): DriveHandlers {
  return {
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

    async createDrive(request, ctx) {
      const drive = validateDrive(request.drive, { idRequired: false });
      return { drive: await write(ctx, (repo) => repo.create(drive, ctx.trace)) };
    },

    async updateDrive(request, ctx) {
      const drive = validateDrive(request.drive, { idRequired: true });
      return { drive: await write(ctx, (repo) => repo.update(drive, ctx.trace)) };
    },

    async deleteDrive(request, ctx) {
      requirePositive(request.driveId, 'drive_id');
      requireUserId(request.userId);
      const { tombstone, withdrawnGroupId } = await write(ctx, (repo) =>
        repo.deleteDrive(request.driveId, request.userId, ctx.trace),
      );
      return { tombstone, withdrawnGroupId };
    },
  };
}
