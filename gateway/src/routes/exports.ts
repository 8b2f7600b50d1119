import { usersV1 } from '@mileage/proto';
import { apiTime, apiTimeOrNull } from '@mileage/runtime/formats';
import { MAX_ARCHIVE_READ, type CallSettings } from '@mileage/runtime/grpc';
import type { Request } from 'express';
import { writeParts } from '../paged-stream';
import { HttpProblem, type ValidationIssue } from '../problems';
import { StreamedBody, type Account, type RouteSpec, type V1Deps } from '../v1';
import { uuidPathParameter, UUID } from './request-input';

/** `/v1/organization/exports…` (CONTRACT §8): an organization's exports, requested, followed and downloaded. */

export interface ExportSchema {
  id: string;
  status: 'queued' | 'running' | 'completed' | 'failed' | 'expired';
  requested_at: string;
  completed_at: string | null;
  expires_at: string | null;
  progress: { phase: string; rows: number };
  size_bytes: number | null;
  sha256: string | null;
  /** (+) Why a failed export failed. */
  failure_reason: string | null;
}

const STATUS: Record<usersV1.ExportStatus, ExportSchema['status']> = {
  [usersV1.ExportStatus.EXPORT_STATUS_UNSPECIFIED]: 'queued',
  [usersV1.ExportStatus.EXPORT_STATUS_QUEUED]: 'queued',
  [usersV1.ExportStatus.EXPORT_STATUS_RUNNING]: 'running',
  [usersV1.ExportStatus.EXPORT_STATUS_COMPLETED]: 'completed',
  [usersV1.ExportStatus.EXPORT_STATUS_FAILED]: 'failed',
  [usersV1.ExportStatus.EXPORT_STATUS_EXPIRED]: 'expired',
  [usersV1.ExportStatus.UNRECOGNIZED]: 'failed',
};

export function toExportSchema(e: usersV1.Export): ExportSchema {
  const status = STATUS[e.status];
  const archived = status === 'completed';
  return {
    id: e.id,
    status,
    requested_at: apiTime(e.requestTime),
    completed_at: apiTimeOrNull(e.completeTime),
    expires_at: apiTimeOrNull(e.expireTime),
    progress: { phase: e.phase, rows: e.rows },
    size_bytes: archived ? e.sizeBytes : null,
    sha256: archived ? e.sha256 : null,
    failure_reason: status === 'failed' ? e.failureReason : null,
  };
}

/** Organization admins only: anyone else is the plain 403 of §3. */
function requireOrganizationAdmin(account: Account): void {
  if (!account.user.organizationAdmin)
    throw new HttpProblem(403, 'Only administrators of the organization may do this');
}

const actorOf = (account: Account) => `user:${account.caller.userId}`;
const exportIdParameter = uuidPathParameter('export_id', 'export');

function validateExportId(req: Request): { input: string } | { issues: ValidationIssue[] } {
  const id = String(req.params.export_id);
  if (UUID.test(id)) return { input: id };
  return {
    issues: [{ loc: ['path', 'export_id'], msg: 'Input should be an export id (a UUID)', type: 'uuid_parsing' }],
  };
}

export const requestExport: RouteSpec<null> = {
  id: 'organization.exports.create',
  method: 'post',
  path: '/v1/organization/exports',
  scope: 'organization_manage',
  perHour: 5,
  parameters: [],
  status: 202,
  response: 'ExportAccepted',
  location: (body) => `/v1/organization/exports/${(body as { id: string }).id}`,
  validate: () => ({ input: null }),
  handle: async (_input, account, deps, call) => {
    requireOrganizationAdmin(account);
    const { export: queued } = await deps.organizations.requestExport(
      { actor: actorOf(account), requestId: call.requestId ?? '' },
      call,
    );
    const { id, status, requested_at } = toExportSchema(queued!);
    return { id, status, requested_at };
  },
};

export const listExports: RouteSpec<null> = {
  id: 'organization.exports.list',
  method: 'get',
  path: '/v1/organization/exports',
  scope: 'organization_manage',
  perMinute: 60,
  parameters: [],
  response: 'ExportListResponse',
  validate: () => ({ input: null }),
  handle: async (_input, account, deps, call) => {
    requireOrganizationAdmin(account);
    const { exports } = await deps.organizations.listExports({}, call);
    return { results: exports.map(toExportSchema) };
  },
};

export const getExport: RouteSpec<string> = {
  id: 'organization.exports.get',
  method: 'get',
  path: '/v1/organization/exports/{export_id}',
  scope: 'organization_manage',
  perMinute: 60,
  parameters: [exportIdParameter],
  response: 'ExportSchema',
  validate: validateExportId,
  handle: async (id, account, deps, call) => {
    requireOrganizationAdmin(account);
    return toExportSchema((await deps.organizations.getExport({ id }, call)).export!);
  },
};

/** One `Range: bytes=…` of a single range (RFC 9110 §14.1.2); anything else is ignored, as the RFC lets a server. */
export type ByteRangeRequest = { start: number; end?: number } | { suffix: number } | undefined;

export function parseRange(header: string | undefined): ByteRangeRequest {
  const match = header === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') return { suffix: Number(match[2]) };
  const start = Number(match[1]);
  if (match[2] === '') return { start };
  const end = Number(match[2]);
  return end < start ? undefined : { start, end };
}

/** The bytes of an archive of `size` a range asks for (end included); undefined when it asks for none of them. */
export function rangeOf(
  range: NonNullable<ByteRangeRequest>,
  size: number,
): { start: number; end: number } | undefined {
  if ('suffix' in range)
    return range.suffix > 0 && size > 0 ? { start: Math.max(0, size - range.suffix), end: size - 1 } : undefined;
  if (range.start >= size) return undefined;
  return { start: range.start, end: Math.min(range.end ?? size - 1, size - 1) };
}

async function* archiveBytes(deps: V1Deps, call: CallSettings, id: string, start: number, end: number) {
  for (let offset = start; offset <= end;) {
    const length = Math.min(MAX_ARCHIVE_READ, end + 1 - offset);
    const { data } = await deps.organizations.readExportArchive({ id, offset, length }, call);
    if (!data.length) throw new Error(`the archive of export ${id} ended at ${offset}, before ${end + 1}`);
    yield data;
    offset += data.length;
  }
}

interface DownloadInput {
  id: string;
  range: ByteRangeRequest;
  ifRange: string | undefined;
}

export const downloadExport: RouteSpec<DownloadInput> = {
  id: 'organization.exports.archive',
  method: 'get',
  path: '/v1/organization/exports/{export_id}/archive',
  scope: 'organization_manage',
  perMinute: 30,
  parameters: [exportIdParameter],
  response: 'ExportArchive',
  responseType: 'application/gzip',
  validate: (req) => {
    const id = validateExportId(req);
    const ifRange = req.get('if-range');
    if ('issues' in id) return id;
    return { input: { id: id.input, range: parseRange(req.headers.range), ifRange } };
  },
  handle: async ({ id, range: asked, ifRange }, account, deps, call) => {
    requireOrganizationAdmin(account);
    const shown = toExportSchema((await deps.organizations.getExport({ id }, call)).export!);
    if (shown.status === 'expired')
      throw new HttpProblem(410, `The archive expired at ${shown.expires_at ?? 'its expiry'} and was deleted`);
    if (shown.status !== 'completed')
      throw new HttpProblem(409, `The export is ${shown.status}: its archive can be downloaded once it is completed`);
    const size = shown.size_bytes!;
    const etag = `"${shown.sha256!}"`;
    const common = { ETag: etag, 'Accept-Ranges': 'bytes' };
    // If-Range (RFC 9110 §13.1.5): a range of the archive the client holds part of; another archive is sent whole.
    const range = ifRange === undefined || ifRange === etag ? asked : undefined;
    const wanted = range && rangeOf(range, size);
    if (range && !wanted)
      throw new HttpProblem(416, `The range lies outside the archive's ${size} bytes`, {
        ...common,
        'Content-Range': `bytes */${size}`,
      });
    await deps.organizations.recordExportDownload(
      { id, actor: actorOf(account), requestId: call.requestId ?? '' },
      call,
    );
    const { start, end } = wanted ?? { start: 0, end: size - 1 };
    return new StreamedBody('application/gzip', (res) => writeParts(res, archiveBytes(deps, call, id, start, end)), {
      status: wanted ? 206 : 200,
      headers: {
        ...common,
        'Content-Length': String(end + 1 - start),
        'Content-Disposition': `attachment; filename="mileage-export-${id}.tar.gz"`,
        ...(wanted ? { 'Content-Range': `bytes ${start}-${end}/${size}` } : {}),
      },
    });
  },
};
