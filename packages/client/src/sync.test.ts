// The sync helpers against a server that follows the contract (src/testing/contract-server.ts): pages and cursors,
// 429 / 503 with Retry-After, bounded retries, abort, 410 → full resync, tombstones. The same helpers against the
// real stack: examples/payroll-sync's integration test.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createMileageClient, type MileageClient } from './client';
import {
  applySync,
  MileageApiError,
  retryAfterMs,
  syncReportedDrives,
  syncUserDrives,
  type SyncEvent,
  type SyncOptions,
} from './sync';
import { ContractServer, type FeedRow } from './testing/contract-server';

const server = new ContractServer();
let client: MileageClient;
let tokenCalls = 0;

before(async () => {
  await server.start();
  client = createMileageClient({
    baseUrl: `${server.url}/`,
    token: async () => `token-${++tokenCalls}`,
  });
});
after(() => server.stop());
beforeEach(() => {
  server.rows = [];
  server.faults = [];
  server.requests = [];
  server.completeSince = undefined;
  server.onRequest = undefined;
});

const at = (second: number) => new Date(Date.UTC(2026, 10, 1, 12, 0, second)).toISOString();
const live = (id: number, second: number): FeedRow => ({ id, modified: at(second), fields: { status: 'submitted' } });
const dead = (id: number, second: number): FeedRow => ({ id, modified: at(second), deleted: true });

async function collect<L, T>(events: AsyncIterable<SyncEvent<L, T>>) {
  const out: SyncEvent<L, T>[] = [];
  for await (const e of events) out.push(e);
  return out;
}
const summary = (events: SyncEvent<unknown, unknown>[]) =>
  events.map((e) => (e.kind === 'upsert' || e.kind === 'delete' ? `${e.kind}:${e.id}` : e.kind));
const reported = (options: SyncOptions = {}) => collect(syncReportedDrives(client, 7, { pageSize: 2, ...options }));

describe('syncReportedDrives', () => {
  test('a walk without state is full: reset first, every page through next_cursor, the newest modified as watermark', async () => {
    server.rows = [live(1, 1), live(2, 2), live(3, 3), live(4, 4), live(5, 5)];
    const events = await reported();
    assert.deepEqual(summary(events), [
      'reset',
      'upsert:5',
      'upsert:4',
      'upsert:3',
      'upsert:2',
      'upsert:1',
      'complete',
    ]);
    assert.deepEqual(events.at(-1), {
      kind: 'complete',
      state: { version: 1, watermark: at(5) },
      full: true,
      pages: 3,
      upserts: 5,
      deletes: 0,
    });
    assert.equal(server.requests.length, 3);
    assert.deepEqual(server.requests[0]!.query, { filter_by: 'modified', limit: '2', include_deleted: 'true' });
    assert.ok(server.requests[1]!.query.cursor && server.requests[2]!.query.cursor);
    assert.equal(server.requests[0]!.path, '/v1/groups/7/reported-drives');
    // The token source is asked before every request.
    const tokens = server.requests.map((r) => r.authorization);
    assert.ok(tokens.every((t) => /^Bearer token-\d+$/.test(t ?? '')));
    assert.equal(new Set(tokens).size, 3);
  });

  test('an incremental walk starts after the watermark and surfaces tombstones as deletes, distinct from live items', async () => {
    server.rows = [live(1, 1), live(2, 2), live(3, 3)];
    const first = await reported();
    const last = first.at(-1)!;
    assert.equal(last.kind, 'complete');
    const state = last.kind === 'complete' ? last.state : null;
    server.rows = [live(1, 1), live(2, 2), dead(3, 6), live(4, 5), { ...live(2, 7), fields: { status: 'approved' } }];
    server.requests = [];
    const events = await reported({ state });
    assert.deepEqual(summary(events), ['upsert:2', 'delete:3', 'upsert:4', 'complete']);
    assert.equal(server.requests[0]!.query.date_after, at(3));
    assert.equal(server.requests[0]!.query.include_deleted, 'true');
    const deleted = events.find((e) => e.kind === 'delete')!;
    assert.deepEqual(deleted, {
      kind: 'delete',
      id: '3',
      modified: at(6),
      tombstone: { id: '3', deleted: true, modified: at(6) },
    });
    assert.deepEqual((events.at(-1) as { state: unknown }).state, { version: 1, watermark: at(7) });
    // Nothing new: nothing listed, the watermark stays.
    const again = await reported({ state: { version: 1, watermark: at(7) } });
    assert.deepEqual(summary(again), ['complete']);
    assert.deepEqual((again.at(-1) as { state: unknown }).state, { version: 1, watermark: at(7) });
  });

  test('many rows on one timestamp across page boundaries: each exactly once; a later, older sight of an id is skipped', async () => {
    server.rows = [live(10, 9), live(11, 9), live(12, 9), live(13, 9), live(14, 9), dead(12, 8), live(1, 1)];
    const events = await reported({ state: { version: 1, watermark: at(0) } });
    // Newest first: the withdrawn report's tombstone (older) comes after the live re-report and must not delete it.
    assert.deepEqual(summary(events), [
      'upsert:14',
      'upsert:13',
      'upsert:12',
      'upsert:11',
      'upsert:10',
      'upsert:1',
      'complete',
    ]);
    assert.equal((events.at(-1) as { pages: number }).pages, 4);
  });

  test('429 and 503 are retried after Retry-After (seconds or an HTTP date), 502 / 504 with backoff', async () => {
    server.rows = [live(1, 1)];
    server.faults = [
      { status: 429, headers: { 'retry-after': '1' } },
      { status: 503, headers: { 'retry-after': new Date(Date.now() - 5000).toUTCString() } },
      { status: 502 },
      { status: 504 },
    ];
    const retries: unknown[] = [];
    const started = Date.now();
    const events = await reported({ baseRetryDelayMs: 5, onRetry: (info) => retries.push(info) });
    assert.ok(Date.now() - started >= 950, 'waited for Retry-After: 1');
    assert.deepEqual(summary(events), ['reset', 'upsert:1', 'complete']);
    assert.deepEqual(
      retries.map((r) => (r as { status: number }).status),
      [429, 503, 502, 504],
    );
    assert.equal((retries[0] as { delayMs: number }).delayMs, 1000);
    assert.equal((retries[1] as { delayMs: number }).delayMs, 0);
  });

  test('retries are bounded: the last answer is thrown with its status, body and request id', async () => {
    server.faults = Array.from({ length: 5 }, () => ({ status: 503, headers: { 'retry-after': '0' } }));
    await assert.rejects(reported({ maxRetries: 2 }), (err: unknown) => {
      assert.ok(err instanceof MileageApiError);
      assert.equal(err.status, 503);
      assert.equal(err.requestId, 'req-3');
      assert.deepEqual(err.body, { detail: 'injected 503' });
      return true;
    });
    assert.equal(server.requests.length, 3);
  });

  test('a Retry-After longer than allowed is not waited for', async () => {
    server.faults = [{ status: 429, headers: { 'retry-after': '3600' } }];
    await assert.rejects(reported({ maxRetryDelayMs: 60_000 }), { name: 'MileageApiError', status: 429 });
    assert.equal(server.requests.length, 1);
  });

  test('an AbortSignal stops a walk while it waits', async () => {
    server.faults = [{ status: 429, headers: { 'retry-after': '60' } }];
    const controller = new AbortController();
    const started = Date.now();
    await assert.rejects(reported({ signal: controller.signal, onRetry: () => controller.abort() }), {
      name: 'AbortError',
    });
    assert.ok(Date.now() - started < 5000);
    // Also while a request is in flight (the server never answers).
    server.faults = [{ status: 0 }];
    const inFlight = new AbortController();
    server.onRequest = () => inFlight.abort();
    await assert.rejects(reported({ signal: inFlight.signal }), { name: 'AbortError' });
    const aborted = AbortSignal.abort();
    await assert.rejects(reported({ signal: aborted }), { name: 'AbortError' });
  });

  test('401, 403 and 422 are not retried', async () => {
    for (const status of [401, 403, 422]) {
      server.requests = [];
      server.faults = [{ status, body: { detail: `no (${status})` } }];
      await assert.rejects(reported(), {
        name: 'MileageApiError',
        status,
        message: `${status}: no (${status}) (request req-1)`,
      });
      assert.equal(server.requests.length, 1);
    }
  });

  test('410 Gone in an incremental walk: a reset marker, then a full walk; its watermark is kept', async () => {
    server.rows = [live(1, 1), live(2, 2), dead(3, 3), live(4, 4)];
    server.completeSince = at(0);
    const events = await reported({ state: { version: 1, watermark: '2026-01-01T00:00:00.000Z' } });
    assert.deepEqual(summary(events), ['reset', 'upsert:4', 'delete:3', 'upsert:2', 'upsert:1', 'complete']);
    assert.deepEqual(events[0], { kind: 'reset', reason: 'resync-required', detail: 'Start a full sync' });
    assert.deepEqual(events.at(-1), {
      kind: 'complete',
      state: { version: 1, watermark: at(4) },
      full: true,
      pages: 2,
      upserts: 3,
      deletes: 1,
    });
    assert.equal(server.requests[1]!.query.date_after, undefined);
  });

  test('410 in the middle of an incremental walk: the changes seen are followed by a reset', async () => {
    server.rows = [live(1, 1), live(2, 2), live(3, 3), live(4, 4)];
    server.faults = [];
    const walk = syncReportedDrives(client, 7, { pageSize: 2, state: { version: 1, watermark: at(0) } });
    const first = await walk.next();
    assert.deepEqual(summary([first.value as SyncEvent<unknown, unknown>]), ['upsert:4']);
    server.faults = [{ status: 410, body: { type: '/errors/resync-required', detail: 'purged' } }];
    const rest = await collect(walk);
    assert.deepEqual(summary(rest), ['upsert:3', 'reset', 'upsert:4', 'upsert:3', 'upsert:2', 'upsert:1', 'complete']);
  });

  test('410 on a later page of a full walk (the database restored under it): a reset, then the full walk again', async () => {
    server.rows = [live(1, 1), live(2, 2), live(3, 3)];
    server.faults = [];
    const walk = syncReportedDrives(client, 7, { pageSize: 2 });
    const firstPage = [(await walk.next()).value, (await walk.next()).value, (await walk.next()).value];
    assert.deepEqual(summary(firstPage as SyncEvent<unknown, unknown>[]), ['reset', 'upsert:3', 'upsert:2']);
    server.faults = [{ status: 410, body: { type: '/errors/resync-required', detail: 'restored' } }];
    const rest = await collect(walk);
    assert.deepEqual(summary(rest), ['reset', 'upsert:3', 'upsert:2', 'upsert:1', 'complete']);
    assert.deepEqual(rest[0], { kind: 'reset', reason: 'resync-required', detail: 'restored' });
    assert.equal((rest.at(-1) as { full: boolean }).full, true);
  });

  test('410 for a full walk is not looped on', async () => {
    server.faults = [{ status: 410 }, { status: 410 }];
    await assert.rejects(reported(), { name: 'MileageApiError', status: 410 });
    server.faults = [{ status: 410 }, { status: 410 }];
    const events: string[] = [];
    await assert.rejects(
      async () => {
        for await (const e of syncReportedDrives(client, 7, { state: { version: 1, watermark: at(1) } }))
          events.push(e.kind);
      },
      { status: 410 },
    );
    assert.deepEqual(events, ['reset']);
  });

  test('a cursor the server no longer accepts (422 on cursor) restarts the walk once', async () => {
    server.rows = [live(1, 1), live(2, 2), live(3, 3)];
    server.faults = [];
    const walk = syncReportedDrives(client, 7, { pageSize: 2, state: { version: 1, watermark: at(0) } });
    const events: SyncEvent<unknown, unknown>[] = [(await walk.next()).value as SyncEvent<unknown, unknown>];
    await walk.next();
    server.faults = [
      { status: 422, body: { detail: [{ loc: ['query', 'cursor'], msg: 'Invalid cursor', type: 'x' }] } },
    ];
    events.push(...(await collect(walk)));
    assert.deepEqual(summary(events), ['upsert:3', 'upsert:3', 'upsert:2', 'upsert:1', 'complete']);
  });

  test('includeDeleted: false asks for live items only', async () => {
    server.rows = [live(1, 1), dead(2, 2)];
    const events = await reported({ includeDeleted: false });
    assert.deepEqual(summary(events), ['reset', 'upsert:1', 'complete']);
    assert.equal(server.requests[0]!.query.include_deleted, undefined);
  });

  test('overlapMs starts the incremental walk earlier', async () => {
    server.rows = [live(1, 1), live(2, 2)];
    const events = await reported({ state: { version: 1, watermark: at(2) }, overlapMs: 500 });
    assert.equal(server.requests[0]!.query.date_after, new Date(Date.parse(at(2)) - 500).toISOString());
    assert.deepEqual(summary(events), ['upsert:2', 'complete']);
    assert.deepEqual((events.at(-1) as { state: unknown }).state, { version: 1, watermark: at(2) });
  });
});

describe('syncUserDrives', () => {
  test('a user’s drives: drive_id as the id, classification all, tombstones {drive_id, deleted}', async () => {
    server.rows = [live(5, 5), dead(6, 6)];
    const events = await collect(syncUserDrives(client, 'BobDriver1', { state: { version: 1, watermark: at(1) } }));
    assert.deepEqual(summary(events), ['delete:6', 'upsert:5', 'complete']);
    assert.deepEqual((events[0] as { tombstone: unknown }).tombstone, { drive_id: 6, deleted: true, modified: at(6) });
    assert.equal(server.requests[0]!.path, '/v1/users/BobDriver1/drives');
    assert.equal(server.requests[0]!.query.classification, 'all');
  });
});

describe('applySync', () => {
  test('every event reaches the target; commit gets the state last', async () => {
    server.rows = [live(1, 1), live(2, 2), dead(3, 3)];
    const calls: string[] = [];
    const done = await applySync(syncReportedDrives(client, 7), {
      reset: (reason) => void calls.push(`reset ${reason}`),
      upsert: (id) => void calls.push(`upsert ${id}`),
      remove: (id) => void calls.push(`remove ${id}`),
      commit: (state) => void calls.push(`commit ${state.watermark}`),
    });
    assert.deepEqual(calls, ['reset initial', 'remove 3', 'upsert 2', 'upsert 1', `commit ${at(3)}`]);
    assert.equal(done.full, true);
  });
});

test('retryAfterMs reads delta-seconds and HTTP dates', () => {
  const now = Date.parse('2026-11-23T12:00:00Z');
  assert.equal(retryAfterMs('7', now), 7000);
  assert.equal(retryAfterMs('Mon, 23 Nov 2026 12:00:30 GMT', now), 30_000);
  assert.equal(retryAfterMs('Mon, 23 Nov 2026 11:00:00 GMT', now), 0);
  assert.equal(retryAfterMs(null, now), undefined);
  assert.equal(retryAfterMs('soon', now), undefined);
});
