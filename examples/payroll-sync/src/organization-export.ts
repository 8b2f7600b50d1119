import {
  downloadExport,
  MileageApiError,
  requestExport,
  waitForExport,
  type Export,
  type MileageClient,
  type TokenSource,
} from '@mileage/client';
import { readdir, rename, rm } from 'node:fs/promises';
import * as path from 'node:path';
import { verifyArchive, type VerifiedArchive } from './archive';

export interface OrganizationExportOptions {
  baseUrl: string;
  token: TokenSource;
  signal?: AbortSignal;
  /** Between two looks at a queued or running export (the client's default: 2 s). */
  intervalMs?: number;
  onProgress?: (exported: Export) => void;
  onBytes?: (received: number, total: number | undefined) => void;
}

export interface OrganizationExportResult extends VerifiedArchive {
  id: string;
  file: string;
  sizeBytes: number;
  sha256: string;
  /** The export was already queued or running when this run asked for one (409): that one was taken. */
  alreadyRunning: boolean;
  /** A download an earlier run left unfinished was continued: no new export was requested. */
  resumed: boolean;
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** Where the archive of export `id` is downloaded to before it is checked and renamed to `file`. */
export const partFileOf = (file: string, id: string) => `${file}.${id}.part`;

/**
 * A download an earlier run left (`<file>.<export id>.part`) whose export is still completed: its id, to continue it
 * with `Range`. Parts of exports that failed, expired or are gone are removed.
 */
async function unfinishedDownload(client: MileageClient, file: string): Promise<string | undefined> {
  const pattern = new RegExp(`^${path.basename(file).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.(${UUID})\\.part$`);
  const ids = (await readdir(path.dirname(file))).flatMap((name) => pattern.exec(name)?.[1] ?? []);
  let resumable: string | undefined;
  for (const id of ids) {
    const { data, error, response } = await client.GET('/v1/organization/exports/{export_id}', {
      params: { path: { export_id: id } },
    });
    if (!data && response.status !== 404)
      throw new MileageApiError(response.status, error, response.headers.get('x-request-id'));
    if (!resumable && data?.status === 'completed') resumable = id;
    else await rm(partFileOf(file, id), { force: true });
  }
  return resumable;
}

/**
 * One organization export into `file`: continues a download an earlier run left unfinished, or requests an export
 * (or takes the one already running), waits for it with its progress, downloads its archive (resuming with `Range`
 * after a broken connection; the whole file checked against the archive's SHA-256), checks every file against the
 * manifest's SHA-256, and only then renames it to `file`. An archive that does not match is deleted, never kept.
 */
export async function runOrganizationExport(
  client: MileageClient,
  file: string,
  options: OrganizationExportOptions,
): Promise<OrganizationExportResult> {
  const signal = options.signal ? { signal: options.signal } : {};
  const unfinished = await unfinishedDownload(client, file);
  const { id, alreadyRunning } = unfinished ? { id: unfinished, alreadyRunning: false } : await requestExport(client);
  const exported = await waitForExport(client, id, {
    ...signal,
    ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  const part = partFileOf(file, id);
  const sha256 = await downloadExport(id, part, {
    baseUrl: options.baseUrl,
    token: options.token,
    ...signal,
    ...(options.onBytes ? { onBytes: options.onBytes } : {}),
  });
  let verified: VerifiedArchive;
  try {
    verified = await verifyArchive(part);
  } catch (err) {
    await rm(part, { force: true });
    throw err;
  }
  await rename(part, file);
  return {
    id,
    file,
    sizeBytes: exported.size_bytes ?? 0,
    sha256,
    alreadyRunning,
    resumed: unfinished !== undefined,
    ...verified,
  };
}
