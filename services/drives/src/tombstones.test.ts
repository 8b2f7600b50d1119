/**
 * Deleting drives, withdrawing reports and the change feed (`include_deleted`) over real gRPC and PostgreSQL:
 * tombstones in order with live rows across pages, the retention purge, RESYNC_REQUIRED, and the outbox events
 * written in the same transactions.
 */
import { status } from '@grpc/grpc-js';
import { drivesV1 } from '@mileage/proto';
import { dateToTimestamp, isoToTimestamp, timestampToIso, type WireTimestamp } from '@mileage/runtime/formats';
import { type PromiseClient } from '@mileage/runtime/grpc';
import {
  asOrganization,
  createMigratedDatabase,
  rejection,
  type MigratedDatabase,
  type TestService,
} from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openDatabase } from './database';
import { purgeTombstones } from './drives-repo';
import { startDrivesService, startTestGroups, type TestGroups } from './service.fixture';

const { Classification, ClassificationFilter, Entry, SortField } = drivesV1;
const DAY = 86_400_000;

let database: MigratedDatabase<ReturnType<typeof openDatabase>>;
let db: ReturnType<typeof openDatabase>;
let service: TestService<drivesV1.DrivesServiceClient>;
let client: PromiseClient<drivesV1.DrivesServiceClient>;
let groups: TestGroups;

function drive(userId: string, day: number, classification = Classification.CLASSIFICATION_BUSINESS): drivesV1.Drive {
  const start = new Date(Date.UTC(2026, 9, day, 8));
  return {
    id: 0,
    userId,
    startTime: dateToTimestamp(start),
    endTime: dateToTimestamp(new Date(start.getTime() + 30 * 60_000)),
    classification,
    entry: Entry.ENTRY_MANUAL,
    organizationId: 0,
  };
}

async function create(userId: string, count: number, classification = Classification.CLASSIFICATION_BUSINESS) {
  const ids: number[] = [];
  for (let i = 0; i < count; i++)
    ids.push((await client.createDrive({ drive: drive(userId, 1 + (i % 28), classification) })).drive!.id);
  return ids;
}

type Entry = { id: number; deleted: boolean; time: string };

interface MergedPage {
  /** Live drives and tombstones merged in list order. */
  entries: Entry[];
  hasMore: boolean;
  nextPosition?: drivesV1.PagePosition | undefined;
}

/** Every page of a listing from its start, as the gateway walks it; `check` sees each page. */
async function walk(
  fetchPage: (position: drivesV1.PagePosition | undefined) => Promise<MergedPage>,
  check: (page: MergedPage) => void = () => {},
) {
  const seen: Entry[] = [];
  let position: drivesV1.PagePosition | undefined;
  for (let pages = 0; pages < 200; pages++) {
    const page = await fetchPage(position);
    check(page);
    seen.push(...page.entries);
    if (!page.hasMore) return seen;
    position = page.nextPosition;
  }
  assert.fail('too many pages');
}

const tombstoneEntries = (tombstones: drivesV1.Tombstone[]) =>
  tombstones.map((t) => ({ id: t.driveId, deleted: true, time: timestampToIso(t.deleteTime!) }));

/** A whole walk of a user's drives with include_deleted: drives and tombstones merged as the gateway does. */
const walkUser = (userId: string, more: Partial<drivesV1.ListUserDrivesRequest> = {}, limit = 4) =>
  walk(
    async (position) => {
      const page = await client.listUserDrives({
        userId,
        limit,
        classification: ClassificationFilter.CLASSIFICATION_FILTER_ALL,
        sortField: SortField.SORT_FIELD_MODIFIED,
        ...more,
        ...(position ? { afterPosition: position } : {}),
      });
      const entries = [
        ...page.drives.map((d) => ({ id: d.id, deleted: false, time: timestampToIso(d.updateTime!) })),
        ...tombstoneEntries(page.tombstones),
      ].sort(byListOrder);
      return { entries, hasMore: page.hasMore, nextPosition: page.nextPosition };
    },
    ({ entries, hasMore, nextPosition }) => {
      assert.ok(entries.length <= limit);
      if (!hasMore) return;
      const last = entries[entries.length - 1]!;
      assert.deepEqual(
        { sortTime: nextPosition?.sortTime, id: nextPosition?.id },
        { sortTime: isoToTimestamp(last.time), id: last.id },
        'the position follows the merged page',
      );
    },
  );

const walkGroups = (groupIds: number[], more: Partial<drivesV1.ListReportedDrivesRequest> = {}, limit = 3) =>
  walk(async (position) => {
    const page = await client.listReportedDrives({
      groupIds,
      limit,
      sortField: SortField.SORT_FIELD_MODIFIED,
      includeDeleted: true,
      ...more,
      ...(position ? { afterPosition: position } : {}),
    });
    const entries = [
      ...page.reportedDrives.map((r) => ({ id: r.drive!.id, deleted: false, time: timestampToIso(r.updateTime!) })),
      ...tombstoneEntries(page.tombstones),
    ].sort(byListOrder);
    return { entries, hasMore: page.hasMore, nextPosition: page.nextPosition };
  });

const byListOrder = (a: Entry, b: Entry) => (a.time === b.time ? b.id - a.id : a.time < b.time ? 1 : -1);

const outbox = async (driveId: number) =>
  (
    (await db
      .knex('outbox')
      .select('event_type', 'group_id', 'user_id', 'payload')
      .whereRaw(`payload->>'drive_id' = ?`, [String(driveId)])
      .orderBy([{ column: 'occurred_at' }, { column: 'event_type' }])) as {
      event_type: string;
      group_id: string | null;
      user_id: string;
      payload: Record<string, unknown>;
    }[]
  ).map((e) => ({ ...e, user_id: e.user_id.trim() }));

before(async () => {
  database = await createMigratedDatabase('drives_tombstones', (url) => openDatabase({ url, poolMax: 10 }));
  db = database.db;
  groups = await startTestGroups();
  service = await startAcmeDrives(90);
  client = service.client;
});

after(async () => {
  await service.close();
  await groups.close();
  await database.close();
});

describe('DeleteDrive and WithdrawReport', () => {
  test('a deleted drive leaves the lists and every write; its driver only may delete it, once', async () => {
    const [keep, gone] = await create('DelUser001', 2);
    assert.equal(
      (await rejection(client.deleteDrive({ driveId: gone!, userId: 'OtherUser1' }))).code,
      status.NOT_FOUND,
      "another user's drive",
    );
    const { tombstone, withdrawnGroupId } = await client.deleteDrive({ driveId: gone!, userId: 'DelUser001' });
    assert.equal(withdrawnGroupId, 0);
    assert.equal(tombstone!.driveId, gone);
    assert.equal(tombstone!.userId, 'DelUser001');
    assert.equal(tombstone!.deleteTime!.nanos % 1_000_000, 0, 'whole milliseconds');
    const page = await client.listUserDrives({
      userId: 'DelUser001',
      limit: 10,
      classification: ClassificationFilter.CLASSIFICATION_FILTER_ALL,
      sortField: SortField.SORT_FIELD_MODIFIED,
    });
    assert.deepEqual(
      page.drives.map((d) => d.id),
      [keep],
    );
    assert.deepEqual(page.tombstones, [], 'no tombstones without include_deleted');
    for (const call of [
      () => client.deleteDrive({ driveId: gone!, userId: 'DelUser001' }),
      () => client.reportDrive({ driveId: gone!, groupId: 3 }),
      () => client.updateDrive({ drive: { ...drive('DelUser001', 2), id: gone! } }),
      () => client.withdrawReport({ driveId: gone!, userId: 'DelUser001' }),
    ])
      assert.equal((await rejection(call())).code, status.NOT_FOUND);
    const stored = await db.knex('drive_tombstones').where({ drive_id: gone }).first();
    assert.equal((stored as { drive: { id: string } }).drive.id, String(gone), 'the drive is kept until the purge');
    assert.deepEqual(await outbox(gone!), [], 'an unreported drive concerns no group: no event');
    assert.equal(
      (await rejection(client.deleteDrive({ driveId: 0, userId: 'DelUser001' }))).code,
      status.INVALID_ARGUMENT,
    );
  });

  test('deleting a reported drive withdraws its report (comments too): drive.deleted for its group', async () => {
    const [id] = await create('DelUser002', 1);
    await client.reportDrive({ driveId: id!, groupId: 41 });
    await client.reviewReportedDrive({
      driveId: id!,
      status: 'approved',
      comment: 'ok',
      reviewerEmail: 'a@example.com',
    });
    const { tombstone, withdrawnGroupId } = await client.deleteDrive({ driveId: id!, userId: 'DelUser002' });
    assert.equal(withdrawnGroupId, 41);
    assert.deepEqual(await db.knex('review_comments').where({ drive_id: id }), []);
    const group = await walkGroups([41]);
    assert.deepEqual(group, [{ id: id!, deleted: true, time: timestampToIso(tombstone!.deleteTime!) }]);
    const events = await outbox(id!);
    assert.deepEqual(
      events.map((e) => e.event_type),
      ['drive.reported', 'drive.report_updated', 'drive.deleted'],
    );
    const deleted = events[2]!;
    assert.equal(deleted.group_id, '41');
    assert.equal(deleted.user_id, 'DelUser002');
    assert.deepEqual(deleted.payload, {
      drive_id: id,
      group_id: '41',
      user_id: 'DelUser002',
      modified: timestampToIso(tombstone!.deleteTime!),
    });
    assert.equal(events[0]!.payload.status, 'submitted');
    assert.equal(events[1]!.payload.status, 'approved');
    assert.match(String(events[1]!.payload.review_comment_id), /^\d+$/);
  });

  test('withdrawing a report leaves the drive and a tombstone in the group; reporting again supersedes it', async () => {
    const [id, other] = await create('DelUser003', 2);
    assert.equal(
      (await rejection(client.withdrawReport({ driveId: id!, userId: 'DelUser003' }))).code,
      status.NOT_FOUND,
      'not reported',
    );
    await client.reportDrive({ driveId: id!, groupId: 51 });
    await client.reportDrive({ driveId: other!, groupId: 51 });
    assert.equal(
      (await rejection(client.withdrawReport({ driveId: id!, userId: 'OtherUser1' }))).code,
      status.NOT_FOUND,
      "another user's drive",
    );
    const { tombstone } = await client.withdrawReport({ driveId: id!, userId: 'DelUser003' });
    assert.equal(tombstone!.groupId, 51);
    assert.deepEqual(
      (await walkGroups([51])).map((e) => [e.id, e.deleted]),
      [
        [id, true],
        [other, false],
      ],
    );
    assert.equal((await walkUser('DelUser003', { includeDeleted: true })).filter((e) => e.deleted).length, 0);
    assert.equal(
      (
        await rejection(
          client.reviewReportedDrive({ driveId: id!, status: 'approved', comment: '', reviewerEmail: '' }),
        )
      ).code,
      status.NOT_FOUND,
    );
    await client.reportDrive({ driveId: id!, groupId: 51 });
    assert.deepEqual(
      (await walkGroups([51])).map((e) => [e.id, e.deleted]),
      [
        [id, false],
        [other, false],
      ],
      'the live report replaces the tombstone',
    );
    assert.deepEqual(
      (await outbox(id!)).map((e) => [e.event_type, e.group_id]),
      [
        ['drive.reported', '51'],
        ['drive.report_withdrawn', '51'],
        ['drive.reported', '51'],
      ],
    );
  });

  test('several groups: a drive is listed once, as it is now', async () => {
    const [moved, twice] = await create('DelUser004', 2);
    await client.reportDrive({ driveId: moved!, groupId: 61 });
    await client.withdrawReport({ driveId: moved!, userId: 'DelUser004' });
    await client.reportDrive({ driveId: moved!, groupId: 62 });
    await client.reportDrive({ driveId: twice!, groupId: 61 });
    await client.withdrawReport({ driveId: twice!, userId: 'DelUser004' });
    await client.reportDrive({ driveId: twice!, groupId: 62 });
    await client.withdrawReport({ driveId: twice!, userId: 'DelUser004' });
    const both = await walkGroups([61, 62]);
    assert.deepEqual(
      both.map((e) => [e.id, e.deleted]),
      [
        [twice, true],
        [moved, false],
      ],
    );
    assert.deepEqual(
      (await walkGroups([61])).map((e) => [e.id, e.deleted]),
      [
        [twice, true],
        [moved, true],
      ],
      'each group on its own still hears of its withdrawals',
    );
  });

  test('a failed write records no event (same transaction)', async () => {
    const [id] = await create('DelUser005', 1);
    await client.reportDrive({ driveId: id!, groupId: 71 });
    assert.equal((await rejection(client.reportDrive({ driveId: id!, groupId: 72 }))).code, status.ALREADY_EXISTS);
    assert.deepEqual(
      (await outbox(id!)).map((e) => e.group_id),
      ['71'],
    );
  });
});

describe('the change feed: include_deleted', () => {
  test('tombstones come in order with live drives across pages, each once, ties by id, whatever the classification', async () => {
    const user = 'FeedUser01';
    const business = await create(user, 9);
    const personal = await create(user, 3, Classification.CLASSIFICATION_PERSONAL);
    for (const id of [business[1]!, business[4]!, business[7]!, personal[0]!])
      await client.deleteDrive({ driveId: id, userId: user });
    // Live rows and tombstones sharing timestamps: the keyset must still order them by id and page without loss.
    await db.knex('drives').where({ user_id: user }).whereIn('id', business.slice(0, 5)).update({
      modified_at: '2026-11-10T10:00:00.000Z',
    });
    await db.knex('drive_tombstones').where({ user_id: user }).update({ modified_at: '2026-11-10T10:00:00.000Z' });
    const all = [...business, ...personal];
    const deleted = new Set([business[1]!, business[4]!, business[7]!, personal[0]!]);
    for (const limit of [1, 2, 3, 5, 100]) {
      const walk = await walkUser(user, { includeDeleted: true }, limit);
      assert.deepEqual([...walk].sort(byListOrder), walk, `newest first, ties by id (limit ${limit})`);
      assert.deepEqual(
        walk.map((e) => e.id).sort((a, b) => a - b),
        all,
        `every drive once (limit ${limit})`,
      );
      for (const e of walk) assert.equal(e.deleted, deleted.has(e.id));
    }
    // The business filter applies to live drives; tombstones come whatever the drive's classification was.
    const businessWalk = await walkUser(
      user,
      { includeDeleted: true, classification: ClassificationFilter.CLASSIFICATION_FILTER_BUSINESS },
      3,
    );
    assert.deepEqual(
      businessWalk
        .filter((e) => e.deleted)
        .map((e) => e.id)
        .sort((a, b) => a - b),
      [...deleted].sort((a, b) => a - b),
    );
  });

  test('without include_deleted every walk is what it was: the live part of the walk with it', async () => {
    const user = 'FeedUser02';
    const ids = await create(user, 20);
    // Deterministic pseudo-random deletions, some at shared timestamps.
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    for (const id of ids) if (random() < 0.4) await client.deleteDrive({ driveId: id, userId: user });
    await db.knex('drives').where({ user_id: user }).andWhere('id', '<', ids[10]!).update({
      modified_at: '2026-11-11T00:00:00.000Z',
    });
    for (const limit of [1, 3, 7, 50]) {
      const plain = await walkUser(user, {}, limit);
      const withDeleted = await walkUser(user, { includeDeleted: true }, limit);
      assert.deepEqual(
        plain,
        withDeleted.filter((e) => !e.deleted),
        `limit ${limit}`,
      );
      assert.ok(plain.every((e) => !e.deleted));
    }
  });

  test('an incremental sync after a watermark sees the deletions since, and nothing older', async () => {
    const user = 'FeedUser03';
    const [a, b, c] = await create(user, 3);
    const first = await walkUser(user, { includeDeleted: true });
    const watermark = first[0]!.time;
    await client.deleteDrive({ driveId: b!, userId: user });
    await client.updateDrive({ drive: { ...drive(user, 5), id: c!, description: 'changed' } });
    const next = await walkUser(user, { includeDeleted: true, after: isoToTimestamp(watermark) });
    assert.deepEqual(next.map((e) => [e.id, e.deleted]).sort(), [
      [b, true],
      [c, false],
    ]);
    assert.ok(!next.some((e) => e.id === a));
  });

  test('an incremental sync with deletions racing it ends exactly in step', { timeout: 60_000 }, async () => {
    const user = 'RaceUser01';
    const ids = await create(user, 40);
    const alive = new Set(ids);
    let version = 0;
    // Writers: updates in transactions that stay open for varying times (commit order differs from stamp order),
    // and deletions through the service.
    const writer = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const pool = [...alive];
        const id = pool[Math.floor(Math.random() * pool.length)];
        if (id === undefined) return;
        if (Math.random() < 0.3) {
          alive.delete(id);
          await client.deleteDrive({ driveId: id, userId: user });
        } else {
          await db.knex.transaction(async (tx) => {
            await tx('drives')
              .update({ description: `v${++version}`, modified_at: tx.fn.now() })
              .where({ id });
            await tx.raw('SELECT pg_sleep(?)', [Math.random() * 0.02]);
          });
        }
      }
    };
    const local = new Map<number, string | undefined>();
    let watermark: string | undefined;
    const sync = async () => {
      let position: drivesV1.PagePosition | undefined;
      let newest = watermark;
      for (;;) {
        const page = await client.listUserDrives({
          userId: user,
          limit: 7,
          classification: ClassificationFilter.CLASSIFICATION_FILTER_ALL,
          sortField: SortField.SORT_FIELD_MODIFIED,
          includeDeleted: true,
          ...(watermark ? { after: isoToTimestamp(watermark) } : {}),
          ...(position ? { afterPosition: position } : {}),
        });
        for (const d of page.drives) local.set(d.id, d.description);
        for (const t of page.tombstones) local.delete(t.driveId);
        for (const time of [...page.drives.map((d) => d.updateTime!), ...page.tombstones.map((t) => t.deleteTime!)].map(
          timestampToIso,
        ))
          if (!newest || time > newest) newest = time;
        if (!page.hasMore) break;
        position = page.nextPosition;
      }
      watermark = newest;
    };
    let writing = true;
    const writers = Promise.all([writer(25), writer(25), writer(25)]).finally(() => (writing = false));
    let syncs = 0;
    while (writing) {
      await sync();
      syncs++;
    }
    await writers;
    await sync();
    const truth = (await db.knex('drives').select('id', 'description').where({ user_id: user })) as {
      id: string;
      description: string | null;
    }[];
    assert.deepEqual(
      [...local.keys()].sort((a, b) => a - b),
      truth.map((r) => Number(r.id)).sort((a, b) => a - b),
      `the local copy holds exactly the live drives after ${syncs} syncs`,
    );
    for (const row of truth) assert.equal(local.get(Number(row.id)), row.description ?? undefined);
    assert.ok(truth.length < 40, 'some drives were deleted');
    assert.ok(syncs > 1, 'the reader synced while writers were active');
  });

  test('include_deleted only with the sort by modified time', async () => {
    const err = await rejection(
      client.listUserDrives({
        userId: 'FeedUser01',
        limit: 10,
        classification: ClassificationFilter.CLASSIFICATION_FILTER_ALL,
        sortField: SortField.SORT_FIELD_ENDED,
        includeDeleted: true,
      }),
    );
    assert.equal(err.code, status.INVALID_ARGUMENT);
    assert.deepEqual(
      err.fieldViolations.map((v) => v.field),
      ['include_deleted'],
    );
    assert.equal(
      (
        await rejection(
          client.listReportedDrives({
            groupIds: [1],
            limit: 5,
            sortField: SortField.SORT_FIELD_ENDED,
            includeDeleted: true,
          }),
        )
      ).code,
      status.INVALID_ARGUMENT,
    );
  });

  test('a lower bound older than the retention window: RESYNC_REQUIRED with include_deleted only', async () => {
    const old = dateToTimestamp(new Date(Date.now() - 91 * DAY));
    const recent = dateToTimestamp(new Date(Date.now() - 89 * DAY));
    const list = (after: WireTimestamp, includeDeleted?: boolean) =>
      client.listUserDrives({
        userId: 'FeedUser01',
        limit: 10,
        classification: ClassificationFilter.CLASSIFICATION_FILTER_ALL,
        sortField: SortField.SORT_FIELD_MODIFIED,
        after,
        ...(includeDeleted === undefined ? {} : { includeDeleted }),
      });
    const err = await rejection(list(old, true));
    assert.equal(err.code, status.FAILED_PRECONDITION);
    assert.equal(err.reason, 'RESYNC_REQUIRED');
    assert.match(err.message, /full sync/);
    const reported = await rejection(
      client.listReportedDrives({
        groupIds: [41],
        limit: 5,
        sortField: SortField.SORT_FIELD_MODIFIED,
        after: old,
        includeDeleted: true,
      }),
    );
    assert.equal(reported.reason, 'RESYNC_REQUIRED');
    assert.ok((await list(old)).drives.length > 0, 'without include_deleted: as today');
    assert.ok((await list(old, false)).drives.length > 0);
    await list(recent, true);
    // A cursor carries no time of its own: a walk without a lower bound is a full sync and is always complete.
    const page = await client.listUserDrives({
      userId: 'FeedUser01',
      limit: 1,
      classification: ClassificationFilter.CLASSIFICATION_FILTER_ALL,
      sortField: SortField.SORT_FIELD_MODIFIED,
      includeDeleted: true,
      afterPosition: { sortTime: old, id: 1 },
    });
    assert.equal(page.hasMore, false);
  });
});

describe('retention', () => {
  test('the purge drops tombstones past the window and moves the completeness bound with it', async () => {
    const user = 'PurgeUser1';
    const ids = await create(user, 4);
    await client.reportDrive({ driveId: ids[0]!, groupId: 81 });
    await client.reportDrive({ driveId: ids[1]!, groupId: 81 });
    for (const id of ids.slice(0, 3)) await client.deleteDrive({ driveId: id, userId: user });
    const aged = new Date(Date.now() - 100 * DAY).toISOString();
    await db.knex('drive_tombstones').whereIn('drive_id', [ids[0]!, ids[2]!]).update({ modified_at: aged });
    await db.knex('report_tombstones').where({ drive_id: ids[0]! }).update({ modified_at: aged });

    const purged = await purgeTombstones(db.knex, 90, 1);
    assert.ok(purged.drives >= 2 && purged.reports >= 1, JSON.stringify(purged));
    assert.deepEqual(
      (await walkUser(user, { includeDeleted: true })).map((e) => [e.id, e.deleted]),
      [
        [ids[1], true],
        [ids[3], false],
      ],
    );
    assert.deepEqual(
      (await walkGroups([81])).map((e) => [e.id, e.deleted]),
      [[ids[1], true]],
    );
    const again = await purgeTombstones(db.knex, 90);
    assert.equal(again.drives + again.reports, 0, 'nothing more to purge');

    // A retention lengthened to 200 days: what the 90-day purge dropped is gone, so a bound 150 days ago is still stale.
    const longer = await startAcmeDrives(200);
    try {
      const err = await rejection(
        longer.client.listUserDrives({
          userId: user,
          limit: 5,
          classification: ClassificationFilter.CLASSIFICATION_FILTER_ALL,
          sortField: SortField.SORT_FIELD_MODIFIED,
          includeDeleted: true,
          after: dateToTimestamp(new Date(Date.now() - 150 * DAY)),
        }),
      );
      assert.equal(err.reason, 'RESYNC_REQUIRED');
    } finally {
      await longer.close();
    }
  });
});

/** The service over the file's database, every call acting inside organization 1. */
async function startAcmeDrives(tombstoneRetentionDays: number) {
  const started = await startDrivesService(db.knex, groups, tombstoneRetentionDays);
  return { ...started, client: asOrganization(started.client, 1) };
}
