import type { drivesV1 } from '@mileage/proto';
import { COSTLY_READ } from '@mileage/runtime/database';
import { requireUserId } from '@mileage/runtime/formats';
import { errors, type Handlers } from '@mileage/runtime/grpc';
import type { CallOrganization } from './organization-context';
import { driveSchemaOf } from './render';
import { MAX_LIMIT } from './validation';

type ExportHandlers = Pick<Handlers<drivesV1.DrivesServiceServer>, 'exportUserDrives'>;

/** Drives per page of a person's own copy when the caller names none, and the most it may name. */
export const EXPORT_PAGE_SIZE = 500;

/** A person's own copy of their drives (CONTRACT §8), a page at a time as the caller's reader asks for it. */
export function exportHandlers({ read }: CallOrganization): ExportHandlers {
  return {
    async exportUserDrives(request, ctx) {
      requireUserId(request.userId);
      const size = request.pageSize || EXPORT_PAGE_SIZE;
      if (!Number.isInteger(size) || size < 1 || size > MAX_LIMIT)
        throw errors.invalidArgument(`page_size must be 1..${MAX_LIMIT}`, [
          { field: 'page_size', description: `1..${MAX_LIMIT}` },
        ]);
      if (request.afterId < 0 || request.upToId < 0)
        throw errors.invalidArgument('after_id and up_to_id must not be negative');
      const page = await read(
        ctx,
        (reads) => reads.exportUserDrives(request.userId, request.afterId, request.upToId, size, ctx.trace),
        COSTLY_READ,
      );
      // The lines as the gateway sends them on: it passes the bytes through.
      const lines = page.rows.map((row) => `{"drive":${JSON.stringify(driveSchemaOf(row))}}\n`).join('');
      return {
        drivesNdjson: Buffer.from(lines),
        lastId: page.rows.length ? Number(page.rows[page.rows.length - 1]!.id) : request.afterId,
        upToId: page.upToId,
        hasMore: page.hasMore,
        count: page.rows.length,
      };
    },
  };
}
