import type { usersV1 } from '@mileage/proto';
import { ARCHIVE_READ_MEMORY, errors, MAX_ARCHIVE_READ, type Handlers } from '@mileage/runtime/grpc';
import { isUuid } from '@mileage/runtime/formats';
import { archiveKey, ExportsRepository, toExport } from './exports-repo';
import { inCallOrganization } from '@mileage/runtime/database';
import { type UsersServerDeps } from './organization-context';
import { textViolations, refuse } from './validation';

export type ExportHandlers = Pick<
  Handlers<usersV1.OrganizationsServiceServer>,
  'requestExport' | 'listExports' | 'getExport' | 'readExportArchive' | 'recordExportDownload'
>;

/** The OrganizationsService's exports (users.proto): requested, listed, read back; the job runs in export-job.ts. */
export function exportHandlers(deps: UsersServerDeps): ExportHandlers {
  const read = { read: true };
  /** Where archives are kept; without one (no DATA_DIR nor object store configured) exports are off. */
  const store = () => {
    if (!deps.archives) throw errors.unavailable('organization exports are not configured on this installation');
    return deps.archives;
  };
  const known = async (ctx: Parameters<ExportHandlers['getExport']>[1], id: string) => {
    // A malformed id names no export, like an unknown one (or another organization's).
    const row = isUuid(id)
      ? await inCallOrganization(deps.knex, ctx, (trx, org) => new ExportsRepository(trx, org).get(id, ctx.trace), read)
      : undefined;
    if (!row) throw errors.notFound('export not found', 'EXPORT_NOT_FOUND');
    return row;
  };

  return {
    async requestExport(request, ctx) {
      refuse(textViolations('actor', request.actor, true), 'export');
      store();
      const row = await inCallOrganization(deps.knex, ctx, (trx, org) =>
        new ExportsRepository(trx, org).request({ actor: request.actor, requestId: request.requestId }, ctx.trace),
      );
      return { export: toExport(row) };
    },

    async listExports(_request, ctx) {
      const rows = await inCallOrganization(
        deps.knex,
        ctx,
        (trx, org) => new ExportsRepository(trx, org).list(ctx.trace),
        read,
      );
      const now = Date.now();
      return { exports: rows.map((row) => toExport(row, now)) };
    },

    async getExport(request, ctx) {
      return { export: toExport(await known(ctx, request.id)) };
    },

    async readExportArchive(request, ctx) {
      const row = await known(ctx, request.id);
      const shown = toExport(row);
      if (shown.status !== 3 /* completed */ || !row.size_bytes)
        throw errors.notFound('the export has no archive to read', 'EXPORT_ARCHIVE_NOT_FOUND');
      const size = Number(row.size_bytes);
      const length = Math.min(request.length || MAX_ARCHIVE_READ, MAX_ARCHIVE_READ);
      if (!Number.isSafeInteger(request.offset) || request.offset < 0 || request.offset > size || length < 1)
        throw errors.invalidArgument('offset and length must lie inside the archive', [
          { field: 'offset', description: `0..${size}` },
        ]);
      if (request.offset === size) return { data: Buffer.alloc(0), sizeBytes: size };
      const end = Math.min(request.offset + length, size) - 1;
      // Into memory with room for the answer around it, which encodeArchiveRead writes in place and gives back.
      const into = ARCHIVE_READ_MEMORY.take(end + 1 - request.offset);
      try {
        const read = await store().read(archiveKey(row.id), { start: request.offset, end }, into);
        return { data: into.subarray(0, read), sizeBytes: size };
      } catch (err) {
        ARCHIVE_READ_MEMORY.giveBack(into);
        throw err;
      }
    },

    async recordExportDownload(request, ctx) {
      refuse(textViolations('actor', request.actor, true), 'download');
      const row = await known(ctx, request.id);
      await inCallOrganization(deps.knex, ctx, (trx, org) =>
        new ExportsRepository(trx, org).recordDownload(
          row.id,
          { actor: request.actor, requestId: request.requestId },
          ctx.trace,
        ),
      );
      return {};
    },
  };
}
