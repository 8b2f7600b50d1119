import type { drivesV1 } from '@mileage/proto';
import { COSTLY_READ } from '@mileage/runtime/database';
import { isUuid, requireUserId } from '@mileage/runtime/formats';
import { errors, type Handlers, requireOrganization } from '@mileage/runtime/grpc';
import type { Metrics } from '@mileage/runtime/telemetry';
import type { CallOrganization, DrivesServerDeps } from './organization-context';
import { writeDrivesExportPart } from './export-part';
import { driveSchemaOf } from './render';
import { MAX_LIMIT } from './validation';

type ExportHandlers = Pick<Handlers<drivesV1.DrivesServiceServer>, 'exportUserDrives' | 'writeExportPart'>;

/**
 * `export_part_workers_total{scheduling}`: each export part's worker by the class it ran in, `idle` (Linux's
 * SCHED_IDLE) or `nice_19` (the class could not be had: the container's seccomp profile or a kernel without it).
 */
export function exportWorkerCounter(metrics: Metrics): (idle: boolean) => void {
  const workers = metrics.counter({
    name: 'export_part_workers_total',
    help: "Export parts' worker threads, by the scheduling class they ran in: idle, or nice_19 where it was refused.",
    labelNames: ['scheduling'] as const,
  });
  return (idle) => workers.inc({ scheduling: idle ? 'idle' : 'nice_19' });
}

/** Drives per page of a person's own copy when the caller names none, and the most it may name. */
export const EXPORT_PAGE_SIZE = 500;

/**
 * Exports (CONTRACT §8): a person's own copy of their drives, a page at a time as the caller's reader asks for it; and
 * the Drives service's part of an organization export.
 */
export function exportHandlers({ read }: CallOrganization, deps: DrivesServerDeps): ExportHandlers {
  return {
    /** Its part of an organization export, written to the archive store (export-part.ts). */
    async writeExportPart(request, ctx) {
      if (!isUuid(request.exportId))
        throw errors.invalidArgument('export_id must be a UUID', [{ field: 'export_id', description: 'a UUID' }]);
      if (!deps.archives) throw errors.unavailable('organization exports are not configured on this installation');
      const files = await writeDrivesExportPart(
        deps.knex,
        deps.archives,
        requireOrganization(ctx),
        request.exportId,
        deps.exportDutyCycle,
        (idle) => {
          deps.countExportWorker?.(idle);
          if (!idle)
            deps.logger?.warn(
              { exportId: request.exportId },
              "export part rendered at nice 19: the worker could not enter Linux's idle scheduling class (chrt)",
            );
        },
      );
      return { files: files.map((file) => ({ ...file, gzipBytes: file.gzipBytes ?? 0 })) };
    },

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
