import { setTimeout as sleep } from 'node:timers/promises';
import type { MileageClient, Schemas } from './client';
import type { operations } from './generated/api';

/**
 * Sync walks over the drive lists (CONTRACT §2, §2a): follow `next_cursor`, wait out 429 / 503 (`Retry-After`), see
 * tombstones, and turn 410 Gone into a full resync that the caller cannot overlook.
 *
 * The algorithm (docs/client.md says it at length):
 * 1. No stored state: a full walk — `filter_by=modified` (and `include_deleted=true`), no lower bound. Its first event
 *    is `{kind: 'reset'}`: the local copy is replaced by what follows.
 * 2. With a state: an incremental walk — `filter_by=modified&date_after=<watermark>&include_deleted=true`, every page
 *    through `next_cursor`. Items come newest first; an id met again later in the same walk is an older version (a
 *    report withdrawn, then reported again) and is skipped, so applying events in order always ends on the newest.
 * 3. The new watermark is the largest `modified` of the walk (live items and tombstones), kept only when the walk
 *    completes (`{kind: 'complete', state}`); an interrupted walk leaves the old one, and re-running it only
 *    repeats changes already applied.
 * 4. 410 Gone (the watermark is older than the tombstone retention, or a cursor was read after the point the database
 *    was restored to): `{kind: 'reset', reason: 'resync-required'}`, then a full walk as in 1.
 * Why nothing is missed with an exclusive `date_after` at the newest `modified` seen, even when many rows share that
 * timestamp: the server lists only rows stamped before its *sync horizon* (the start of its oldest running write
 * transaction), so every row it shows at time M is committed and no later commit can be stamped M or earlier; the
 * keyset cursor (modified, id) visits every row of a tie. A change made during the walk gets a stamp above M and is
 * in the next walk.
 */

type Drive = Schemas['DriveSchema'];
type ReportedDrive = Schemas['ReportedDriveSchema'];
export type { Drive, ReportedDrive };

/** A deleted drive or withdrawn report in a change feed (CONTRACT §2a, `include_deleted=true`). */
export interface ReportedDriveTombstone {
  id: string;
  deleted: true;
  modified: string;
}
export interface DriveTombstone {
  drive_id: number;
  deleted: true;
  modified: string;
}

/** What to keep after a completed walk, and hand to the next one. */
export interface SyncState {
  version: 1;
  /** The newest `modified` (RFC 3339) the last completed walk saw; null: none yet (the next walk is full). */
  watermark: string | null;
}

export type SyncEvent<Live, Tombstone> =
  /**
   * A full walk starts: forget the local copy (or mark it, and sweep what was not listed by `complete`). Always the
   * first event of a walk without state, and after a 410 Gone.
   */
  | { kind: 'reset'; reason: 'initial' | 'resync-required'; detail?: string }
  | { kind: 'upsert'; id: string; modified: string; item: Live }
  | { kind: 'delete'; id: string; modified: string; tombstone: Tombstone }
  /** The walk is complete: persist `state` together with the applied changes. The last event. */
  | { kind: 'complete'; state: SyncState; full: boolean; pages: number; upserts: number; deletes: number };

export interface SyncOptions {
  /** The state of the last completed walk; absent or null: a full walk. */
  state?: SyncState | null;
  /** Ask for tombstones (default true). Without them a walk cannot see deletions. */
  includeDeleted?: boolean;
  /** Page size (`limit`, 1..1000; default 500). */
  pageSize?: number;
  signal?: AbortSignal;
  /** Retries of one request on 429, 502, 503, 504 or a network error before giving up (default 6). */
  maxRetries?: number;
  /** The longest single wait, also when `Retry-After` asks for more (default 120 s: then it gives up). */
  maxRetryDelayMs?: number;
  /** The first backoff when no `Retry-After` is given (default 500 ms, doubled per retry, ±20 % jitter). */
  baseRetryDelayMs?: number;
  /**
   * Start the incremental walk this much before the watermark (default 0). Only for servers without the sync
   * horizon; re-listed changes are harmless to an idempotent consumer.
   */
  overlapMs?: number;
  /** Told before every wait. */
  onRetry?: (info: { status: number | 'network'; attempt: number; delayMs: number }) => void;
}

/** A response that the walk does not handle: the status, the problem body and the request id. */
export class MileageApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly requestId: string | null,
  ) {
    const detail = (body as { detail?: unknown } | null)?.detail;
    super(`${status}${typeof detail === 'string' ? `: ${detail}` : ''}${requestId ? ` (request ${requestId})` : ''}`);
    this.name = 'MileageApiError';
  }
}

type Page = { results: readonly unknown[]; has_more: boolean; next_cursor?: string | null };
type Query = Record<string, string | number | boolean>;
type FetchPage = (
  query: Query,
  signal: AbortSignal | undefined,
) => Promise<{ data?: Page; error?: unknown; response: Response }>;

const RETRIED = new Set([429, 502, 503, 504]);

/** `Retry-After` as milliseconds (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** One page, with the bounded, abortable retries of 429 / 502 / 503 / 504 and network errors. */
async function fetchWithRetries(fetchPage: FetchPage, query: Query, o: SyncOptions): Promise<Page | { gone: string }> {
  const maxRetries = o.maxRetries ?? 6;
  const maxDelay = o.maxRetryDelayMs ?? 120_000;
  const base = o.baseRetryDelayMs ?? 500;
  for (let attempt = 0; ; attempt++) {
    o.signal?.throwIfAborted();
    let result: Awaited<ReturnType<FetchPage>> | undefined;
    let failure: unknown;
    try {
      result = await fetchPage(query, o.signal);
    } catch (err) {
      if (o.signal?.aborted) throw o.signal.reason;
      failure = err;
    }
    const status = result ? result.response.status : ('network' as const);
    if (result?.data) return result.data;
    if (result && status === 410) return { gone: problemDetail(result.error) };
    if (status !== 'network' && !RETRIED.has(status)) {
      throw new MileageApiError(status, result!.error, result!.response.headers.get('x-request-id'));
    }
    const asked = result ? retryAfterMs(result.response.headers.get('retry-after')) : undefined;
    const delayMs = asked ?? Math.round(base * 2 ** attempt * (0.8 + 0.4 * Math.random()));
    if (attempt >= maxRetries || delayMs > maxDelay) {
      if (failure) throw failure;
      throw new MileageApiError(status as number, result!.error, result!.response.headers.get('x-request-id'));
    }
    o.onRetry?.({ status, attempt: attempt + 1, delayMs });
    await sleep(delayMs, undefined, o.signal ? { signal: o.signal } : {});
  }
}

function problemDetail(body: unknown): string {
  const detail = (body as { detail?: unknown } | null)?.detail;
  return typeof detail === 'string' ? detail : 'the server asked for a full resync (410 Gone)';
}

const isInvalidCursor = (err: unknown) =>
  err instanceof MileageApiError &&
  err.status === 422 &&
  JSON.stringify((err.body as { detail?: unknown } | null)?.detail ?? '').includes('"cursor"');

async function* walk<Live, Tombstone>(
  fetchPage: FetchPage,
  idOf: (item: Live | Tombstone) => string,
  o: SyncOptions,
): AsyncGenerator<SyncEvent<Live, Tombstone>, void, undefined> {
  const includeDeleted = o.includeDeleted ?? true;
  const limit = o.pageSize ?? 500;
  let since = o.state?.watermark ?? null;
  let full = since === null;
  if (full) yield { kind: 'reset', reason: 'initial' };
  let resyncs = 0;
  let cursorRestarts = 0;
  for (;;) {
    const lowerBound = since === null ? undefined : new Date(Date.parse(since) - (o.overlapMs ?? 0)).toISOString();
    const query: Query = {
      filter_by: 'modified',
      limit,
      ...(includeDeleted ? { include_deleted: true } : {}),
      ...(lowerBound ? { date_after: lowerBound } : {}),
    };
    const seen = new Set<string>();
    let newest: { text: string; ms: number } | undefined;
    const counts = { pages: 0, upserts: 0, deletes: 0 };
    let cursor: string | undefined;
    let restart: 'resync' | 'cursor' | undefined;
    let detail = '';
    for (;;) {
      let page: Page | { gone: string };
      try {
        page = await fetchWithRetries(fetchPage, cursor ? { ...query, cursor } : query, o);
      } catch (err) {
        // A cursor the gateway no longer accepts (restarted without CURSOR_SECRET): the same walk again, once.
        if (cursor && isInvalidCursor(err) && cursorRestarts++ < 1) {
          restart = 'cursor';
          break;
        }
        throw err;
      }
      if ('gone' in page) {
        // A full walk's first page cannot be helped by starting again; a later one can (its cursor was read after the
        // point the database was restored to, CONTRACT §8). Once.
        if ((full && !cursor) || resyncs++ >= 1) throw new MileageApiError(410, { detail: page.gone }, null);
        restart = 'resync';
        detail = page.gone;
        break;
      }
      counts.pages++;
      for (const raw of page.results as readonly (Live | Tombstone)[]) {
        const id = idOf(raw);
        const modified = (raw as { modified: string }).modified;
        const ms = Date.parse(modified);
        if (!newest || ms > newest.ms) newest = { text: modified, ms };
        // Newest first: a second sight of an id in one walk is an older version of it.
        if (seen.has(id)) continue;
        seen.add(id);
        if ((raw as { deleted?: unknown }).deleted === true) {
          counts.deletes++;
          yield { kind: 'delete', id, modified, tombstone: raw as Tombstone };
        } else {
          counts.upserts++;
          yield { kind: 'upsert', id, modified, item: raw as Live };
        }
      }
      if (!page.has_more || !page.next_cursor) break;
      cursor = page.next_cursor;
    }
    if (restart === 'resync') {
      since = null;
      full = true;
      yield { kind: 'reset', reason: 'resync-required', detail };
      continue;
    }
    if (restart === 'cursor') continue;
    const watermark = newest && (since === null || newest.ms > Date.parse(since)) ? newest.text : since;
    yield { kind: 'complete', state: { version: 1, watermark }, full, ...counts };
    return;
  }
}

type ReportedQuery = NonNullable<operations['getGroupReportedDrives']['parameters']['query']>;
type UserDrivesQuery = NonNullable<operations['getUserDrives']['parameters']['query']>;

/**
 * A sync walk over a group's reported drives (`GET /v1/groups/{group_id}/reported-drives`), for its admins.
 * Live items are ReportedDriveSchema, tombstones `{id, deleted: true, modified}`.
 */
export function syncReportedDrives(
  client: MileageClient,
  groupId: string | number,
  options: SyncOptions = {},
): AsyncGenerator<SyncEvent<ReportedDrive, ReportedDriveTombstone>, void, undefined> {
  const fetchPage: FetchPage = (query, signal) =>
    client.GET('/v1/groups/{group_id}/reported-drives', {
      params: { path: { group_id: String(groupId) }, query: query as ReportedQuery },
      ...(signal ? { signal } : {}),
    });
  return walk<ReportedDrive, ReportedDriveTombstone>(fetchPage, (item) => item.id, options);
}

/**
 * A sync walk over the caller's own drives (`GET /v1/users/{user_id}/drives`), `classification` `all` by default
 * (the list's own default is `business`). Live items are DriveSchema, tombstones `{drive_id, deleted: true, modified}`.
 */
export function syncUserDrives(
  client: MileageClient,
  userId: string,
  options: SyncOptions & { classification?: 'business' | 'personal' | 'all' } = {},
): AsyncGenerator<SyncEvent<Drive, DriveTombstone>, void, undefined> {
  const classification = options.classification ?? 'all';
  const fetchPage: FetchPage = (query, signal) =>
    client.GET('/v1/users/{user_id}/drives', {
      params: { path: { user_id: userId }, query: { ...query, classification } as UserDrivesQuery },
      ...(signal ? { signal } : {}),
    });
  return walk<Drive, DriveTombstone>(fetchPage, (item) => String(item.drive_id), options);
}

/**
 * What a sync writes into: the methods a consumer must have, so that none of the events can be left unhandled.
 * `commit` persists the applied changes and the state together (or the changes first: re-applying is harmless).
 */
export interface SyncTarget<Live, Tombstone> {
  reset(reason: 'initial' | 'resync-required'): void | Promise<void>;
  upsert(id: string, item: Live): void | Promise<void>;
  remove(id: string, tombstone: Tombstone): void | Promise<void>;
  commit(state: SyncState, summary: { full: boolean; upserts: number; deletes: number }): void | Promise<void>;
}

/** Applies a walk to a target; resolves with the `complete` event (after `commit`). */
export async function applySync<Live, Tombstone>(
  events: AsyncIterable<SyncEvent<Live, Tombstone>>,
  target: SyncTarget<Live, Tombstone>,
): Promise<Extract<SyncEvent<Live, Tombstone>, { kind: 'complete' }>> {
  for await (const event of events) {
    switch (event.kind) {
      case 'reset':
        await target.reset(event.reason);
        break;
      case 'upsert':
        await target.upsert(event.id, event.item);
        break;
      case 'delete':
        await target.remove(event.id, event.tombstone);
        break;
      case 'complete':
        await target.commit(event.state, event);
        return event;
    }
  }
  throw new Error('the sync walk ended without completing');
}
