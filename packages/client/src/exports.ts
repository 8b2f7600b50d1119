import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { stat, truncate } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClientOptions, MileageClient, Schemas } from './client';
import { MileageApiError } from './sync';

/**
 * Organization exports (CONTRACT §8) for an organization admin's token (scope `organization_manage`): request one,
 * wait for it with its progress, and download its archive, resuming with `Range` where a broken connection stopped.
 */

export type Export = Schemas['ExportSchema'];

/** Requests an export; when one is already queued or running (409), answers that one instead. */
export async function requestExport(client: MileageClient): Promise<{ id: string; alreadyRunning: boolean }> {
  const { data, error, response } = await client.POST('/v1/organization/exports');
  if (data) return { id: data.id, alreadyRunning: false };
  if (response.status === 409) {
    const list = await client.GET('/v1/organization/exports');
    const running = list.data?.results.find((e) => e.status === 'queued' || e.status === 'running');
    if (running) return { id: running.id, alreadyRunning: true };
  }
  throw new MileageApiError(response.status, error, response.headers.get('x-request-id'));
}

export interface WaitOptions {
  /** Between two looks (default 2 s). */
  intervalMs?: number;
  /** Told each time the export is looked at (its status and `progress`). */
  onProgress?: (exported: Export) => void;
  signal?: AbortSignal;
}

/** The export once it is completed; throws when it failed (with its reason) or expired. */
export async function waitForExport(client: MileageClient, id: string, options: WaitOptions = {}): Promise<Export> {
  for (;;) {
    const { data, error, response } = await client.GET('/v1/organization/exports/{export_id}', {
      params: { path: { export_id: id } },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (!data) throw new MileageApiError(response.status, error, response.headers.get('x-request-id'));
    options.onProgress?.(data);
    if (data.status === 'completed') return data;
    if (data.status === 'failed') throw new Error(`export ${id} failed: ${data.failure_reason ?? 'no reason given'}`);
    if (data.status === 'expired') throw new Error(`export ${id} expired: request a new one`);
    await sleep(options.intervalMs ?? 2_000, undefined, options.signal ? { signal: options.signal } : {});
  }
}

export interface DownloadOptions extends Pick<ClientOptions, 'baseUrl' | 'token' | 'fetch'> {
  /** Attempts after a broken connection or a 5xx, each resuming where the file ends (default 5). */
  maxRetries?: number;
  /** The first wait between attempts (default 1 s, doubled each time). */
  retryDelayMs?: number;
  /** Told as bytes arrive: how many the file holds, of how many. */
  onBytes?: (received: number, total: number | undefined) => void;
  signal?: AbortSignal;
}

/**
 * Downloads an export's archive into `file`. What `file` already holds is kept and the rest asked for with `Range`
 * (and `If-Range`, so a different archive starts over), also after a connection that broke mid-way; the whole file is
 * then checked against the archive's SHA-256 (its `ETag`). Answers the SHA-256.
 */
export async function downloadExport(id: string, file: string, options: DownloadOptions): Promise<string> {
  const doFetch = options.fetch ?? globalThis.fetch;
  const url = `${options.baseUrl.replace(/\/+$/, '')}/v1/organization/exports/${encodeURIComponent(id)}/archive`;
  const maxRetries = options.maxRetries ?? 5;
  let etag: string | undefined;
  for (let attempt = 0; ; attempt++) {
    const have = await sizeOf(file);
    const token = typeof options.token === 'string' ? options.token : await options.token();
    const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
    if (have > 0 && etag) {
      headers.Range = `bytes=${have}-`;
      headers['If-Range'] = etag;
    } else if (have > 0) headers.Range = `bytes=${have}-`;
    try {
      const res = await doFetch(url, { headers, ...(options.signal ? { signal: options.signal } : {}) });
      // The file already holds it all (a run stopped after the last byte): checked against the archive's ETag, which
      // the 416 carries too, so also on a first attempt that had none yet.
      if (res.status === 416) {
        const whole = res.headers.get('etag') ?? etag;
        if (whole) {
          await res.body?.cancel();
          return verify(file, whole);
        }
      }
      if (res.status !== 200 && res.status !== 206) {
        const body = await res.json().catch(() => null);
        const error = new MileageApiError(res.status, body, res.headers.get('x-request-id'));
        if (res.status < 500) throw Object.assign(error, { final: true });
        throw error;
      }
      etag = res.headers.get('etag') ?? etag;
      // A 200 is the whole archive: what the file held is dropped.
      if (res.status === 200 && have > 0) await truncate(file, 0);
      const total = totalOf(res);
      let received = res.status === 206 ? have : 0;
      const counted = async function* (body: AsyncIterable<Uint8Array>) {
        for await (const chunk of body) {
          received += chunk.length;
          options.onBytes?.(received, total);
          yield chunk;
        }
      };
      await pipeline(
        Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>),
        counted,
        createWriteStream(file, { flags: res.status === 206 ? 'a' : 'w' }),
      );
      if (total !== undefined && received < total) throw new Error(`the download stopped at ${received} of ${total}`);
      return verify(file, etag);
    } catch (err) {
      if ((err as { final?: boolean }).final || options.signal?.aborted || attempt >= maxRetries) throw err;
      await sleep((options.retryDelayMs ?? 1_000) * 2 ** attempt);
    }
  }
}

async function sizeOf(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch {
    return 0;
  }
}

/** The archive's whole size, from `Content-Range` (206) or `Content-Length` (200). */
function totalOf(res: Response): number | undefined {
  const range = /\/(\d+)$/.exec(res.headers.get('content-range') ?? '');
  if (range) return Number(range[1]);
  const length = res.headers.get('content-length');
  return length === null ? undefined : Number(length);
}

async function verify(file: string, etag: string | undefined): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  const sha256 = hash.digest('hex');
  const expected = etag?.replace(/^W\//, '').replace(/"/g, '');
  if (expected && expected !== sha256)
    throw new Error(`the downloaded archive's SHA-256 is ${sha256}, the server's ${expected}: download it again`);
  return sha256;
}
