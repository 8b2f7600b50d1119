import { status } from '@grpc/grpc-js';
import { drivesV1, groupsV1 } from '@mileage/proto';
import { createGrpcClient } from '@mileage/runtime/grpc';
import { dateToTimestamp, isoToTimestamp, timestampToIso, timestampToMillis } from '@mileage/runtime/formats';
import { freePort } from '@mileage/runtime/config';
import { asOrganization, rejection, serviceSuite } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { openDatabase } from './database';
import { GLOBEX_GROUP, startDrivesService, startTestGroups } from './service.fixture';

const { Classification, ClassificationFilter, Entry, SortField } = drivesV1;

const suite = serviceSuite({
  prefix: 'drives',
  open: (url) => openDatabase({ url, poolMax: 20 }),
  // Every call acts inside organization 1 unless it says otherwise; the Groups service is a real one.
  start: async (db) => {
    const groups = await startTestGroups();
    const service = await startDrivesService(db.knex, groups);
    rawClient = service.client;
    return {
      ...service,
      client: asOrganization(service.client, 1),
      async close() {
        await service.close();
        await groups.close();
      },
    };
  },
});
/** The client without an organization. */
let rawClient: typeof suite.client;

function drive(userId: string, startIso: string, overrides: Partial<drivesV1.Drive> = {}): drivesV1.Drive {
  const start = new Date(startIso);
  return {
    id: 0,
    userId,
    startTime: dateToTimestamp(start),
    endTime: dateToTimestamp(new Date(start.getTime() + 30 * 60_000)),
    classification: Classification.CLASSIFICATION_BUSINESS,
    distance: { amount: 12.5, units: 'mi' },
    value: { amount: 838, currency: 'USD' },
    tollFees: { amount: 250, currency: 'USD' },
    entry: Entry.ENTRY_AUTOMATIC,
    organizationId: 1,
    start: {
      name: 'Office',
      lat: '41.8781',
      lon: '-87.6298',
      time: dateToTimestamp(start),
      address: { country: 'US', state: 'IL', city: 'Chicago', street: '1 Main St', postalCode: '60601' },
    },
    ...overrides,
  };
}

const list = (userId: string, more: Partial<drivesV1.ListUserDrivesRequest> = {}, client = suite.client) =>
  client.listUserDrives({
    userId,
    limit: 100,
    classification: ClassificationFilter.CLASSIFICATION_FILTER_ALL,
    sortField: SortField.SORT_FIELD_MODIFIED,
    ...more,
  });

describe('DrivesService over real gRPC and PostgreSQL', () => {
  test('stores every field and reads it back', async () => {
    const sent = drive('DriverA001', '2026-11-01T08:00:00Z', {
      description: 'client visit',
      purpose: 'Sales',
      parkingFees: { amount: 500, currency: 'USD' },
    });
    const { drive: created } = await suite.client.createDrive({ drive: sent });
    assert.ok(created!.id > 0);
    const { drives } = await list('DriverA001');
    assert.deepEqual(drives, [created]);
    const plain = (d: drivesV1.Drive) =>
      JSON.parse(JSON.stringify({ ...d, id: 0, createTime: null, updateTime: null })) as unknown;
    assert.deepEqual(plain(created!), plain(sent));
  });

  test('classification filter: business by default, personal, all', async () => {
    for (const [i, c] of [
      Classification.CLASSIFICATION_BUSINESS,
      Classification.CLASSIFICATION_PERSONAL,
      Classification.CLASSIFICATION_UNCLASSIFIED,
    ].entries()) {
      await suite.client.createDrive({
        drive: drive('DriverB001', `2026-11-0${i + 1}T08:00:00Z`, { classification: c }),
      });
    }
    const count = async (classification: drivesV1.ClassificationFilter) =>
      (await list('DriverB001', { classification })).drives.length;
    assert.equal(await count(ClassificationFilter.CLASSIFICATION_FILTER_UNSPECIFIED), 1);
    assert.equal(await count(ClassificationFilter.CLASSIFICATION_FILTER_PERSONAL), 1);
    assert.equal(await count(ClassificationFilter.CLASSIFICATION_FILTER_ALL), 3);
  });

  test('keyset paging over many drives sharing one timestamp returns each once, newest first, ties by id descending', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 23; i++)
      ids.push((await suite.client.createDrive({ drive: drive('DriverC001', '2026-11-02T09:00:00Z') })).drive!.id);
    await suite.db.knex('drives').where({ user_id: 'DriverC001' }).update({ modified_at: '2026-11-03T00:00:00Z' });
    const seen: number[] = [];
    let position: drivesV1.PagePosition | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = await list('DriverC001', { limit: 7, ...(position ? { afterPosition: position } : {}) });
      seen.push(...page.drives.map((d) => d.id));
      if (!page.hasMore) break;
      position = page.nextPosition;
    }
    assert.deepEqual(
      seen,
      [...ids].sort((a, b) => b - a),
    );
  });

  test('sorting by end time with exclusive date bounds', async () => {
    const made = [];
    for (const day of ['01', '02', '03', '04'])
      made.push((await suite.client.createDrive({ drive: drive('DriverD001', `2026-10-${day}T10:00:00Z`) })).drive!);
    const { drives } = await list('DriverD001', {
      sortField: SortField.SORT_FIELD_ENDED,
      after: made[0]!.endTime,
      before: made[3]!.endTime,
    });
    assert.deepEqual(
      drives.map((d) => d.id),
      [made[2]!.id, made[1]!.id],
    );
  });

  test('reports, reviews with comments, and the reported drives of groups', async () => {
    const a = (await suite.client.createDrive({ drive: drive('DriverE001', '2026-11-05T08:00:00Z') })).drive!;
    const b = (await suite.client.createDrive({ drive: drive('DriverE001', '2026-11-06T08:00:00Z') })).drive!;
    const c = (await suite.client.createDrive({ drive: drive('DriverE002', '2026-11-06T09:00:00Z') })).drive!;
    const reported = (await suite.client.reportDrive({ driveId: a.id, groupId: 7 })).reportedDrive!;
    assert.equal(reported.status, 'submitted');
    assert.deepEqual(reported.updateTime, reported.reportTime);
    await suite.client.reportDrive({ driveId: b.id, groupId: 7 });
    await suite.client.reportDrive({ driveId: c.id, groupId: 8 });
    assert.equal(
      (await rejection(suite.client.reportDrive({ driveId: a.id, groupId: 8 }))).code,
      status.ALREADY_EXISTS,
    );
    assert.equal((await rejection(suite.client.reportDrive({ driveId: 999_999, groupId: 8 }))).code, status.NOT_FOUND);
    const reviewed = (
      await suite.client.reviewReportedDrive({
        driveId: a.id,
        status: 'approved',
        comment: 'Looks right',
        reviewerEmail: 'alice@example.com',
      })
    ).reportedDrive!;
    assert.equal(reviewed.status, 'approved');
    assert.deepEqual(
      reviewed.reviewComments.map((r) => [r.text, r.userEmail]),
      [['Looks right', 'alice@example.com']],
    );
    assert.ok(timestampToMillis(reviewed.updateTime!) >= timestampToMillis(reviewed.reportTime!));

    const page = await suite.client.listReportedDrives({
      groupIds: [7],
      limit: 10,
      sortField: SortField.SORT_FIELD_MODIFIED,
    });
    assert.deepEqual(
      page.reportedDrives.map((r) => r.drive!.id),
      [a.id, b.id],
      'the reviewed drive is the most recently modified',
    );
    assert.equal(page.reportedDrives[0]!.reviewComments.length, 1);
    const both = await suite.client.listReportedDrives({
      groupIds: [7, 8],
      limit: 10,
      sortField: SortField.SORT_FIELD_ENDED,
    });
    assert.deepEqual(
      both.reportedDrives.map((r) => r.drive!.id),
      [c.id, b.id, a.id],
    );
    assert.equal(
      (
        await rejection(
          suite.client.reviewReportedDrive({
            driveId: c.id + 1000,
            status: 'approved',
            comment: '',
            reviewerEmail: '',
          }),
        )
      ).code,
      status.NOT_FOUND,
    );
  });

  test('invalid drives and list requests are refused', async () => {
    const bad = await rejection(
      suite.client.createDrive({
        drive: drive('bad', '2026-11-01T08:00:00Z', {
          entry: Entry.ENTRY_UNSPECIFIED,
          value: { amount: -1, currency: 'EUR' },
        }),
      }),
    );
    assert.equal(bad.code, status.INVALID_ARGUMENT);
    assert.deepEqual(bad.fieldViolations.map((v) => v.field).sort(), ['entry', 'user_id', 'value']);
    assert.equal((await rejection(list('DriverA001', { limit: 0 }))).code, status.INVALID_ARGUMENT);
    assert.equal((await rejection(list('DriverA001', { limit: 1001 }))).code, status.INVALID_ARGUMENT);
  });

  test('a change whose transaction is still open holds back the list by modified time', async () => {
    const x = (await suite.client.createDrive({ drive: drive('DriverF001', '2026-11-07T08:00:00Z') })).drive!;
    const y = (await suite.client.createDrive({ drive: drive('DriverF001', '2026-11-07T09:00:00Z') })).drive!;
    const watermark = (await list('DriverF001')).drives[0]!.updateTime!;
    const slow = await suite.db.knex.transaction();
    try {
      // X is stamped with the slow transaction's start, before Y's change commits with a later stamp.
      await slow('drives').update({ description: 'slow', modified_at: slow.fn.now() }).where({ id: x.id });
      await suite.client.updateDrive({ drive: { ...y, description: 'fast' } });
      const during = await list('DriverF001', { after: watermark });
      assert.deepEqual(during.drives, [], 'Y must wait: handing it out would move the watermark past X');
      await slow.commit();
    } catch (err) {
      await slow.rollback();
      throw err;
    }
    const afterCommit = await list('DriverF001', { after: watermark });
    assert.deepEqual(afterCommit.drives.map((d) => d.id).sort(), [x.id, y.id].sort());
  });

  test('an incremental sync loses nothing while writers keep changing drives', { timeout: 60_000 }, async () => {
    const user = 'SyncUser01';
    const ids: number[] = [];
    for (let i = 0; i < 30; i++)
      ids.push((await suite.client.createDrive({ drive: drive(user, '2026-11-08T08:00:00Z') })).drive!.id);
    let writing = true;
    let version = 0;
    // Writers: transactions that stay open for varying times, so commit order differs from stamp order.
    const writer = async () => {
      for (let n = 0; n < 40; n++) {
        const id = ids[Math.floor(Math.random() * ids.length)]!;
        await suite.db.knex.transaction(async (tx) => {
          await tx('drives')
            .update({ description: `v${++version}`, modified_at: tx.fn.now() })
            .where({ id });
          await tx.raw('SELECT pg_sleep(?)', [Math.random() * 0.02]);
        });
      }
    };
    const local = new Map<number, string | undefined>();
    let watermark: string | undefined;
    const sync = async () => {
      let position: drivesV1.PagePosition | undefined;
      let newest = watermark;
      for (;;) {
        const page = await list(user, {
          limit: 10,
          ...(watermark ? { after: isoToTimestamp(watermark) } : {}),
          ...(position ? { afterPosition: position } : {}),
        });
        for (const d of page.drives) {
          local.set(d.id, d.description);
          const modified = timestampToIso(d.updateTime!);
          if (!newest || modified > newest) newest = modified;
        }
        if (!page.hasMore) break;
        position = page.nextPosition;
      }
      watermark = newest;
    };
    const writers = Promise.all([writer(), writer(), writer(), writer()]).finally(() => (writing = false));
    let syncs = 0;
    while (writing) {
      await sync();
      syncs++;
    }
    await writers;
    await sync();
    const truth = await suite.db.knex('drives').select('id', 'description').where({ user_id: user });
    assert.equal(truth.length, 30);
    for (const row of truth as { id: string; description: string | null }[]) {
      assert.equal(local.get(Number(row.id)), row.description ?? undefined, `drive ${row.id} after ${syncs} syncs`);
    }
    assert.ok(syncs > 1, 'the reader synced while writers were active');
  });

  test('a call without an organization is refused', async () => {
    const refused = await rejection(list('DriverA001', {}, rawClient));
    assert.deepEqual([refused.code, refused.reason], [status.FAILED_PRECONDITION, 'ORGANIZATION_REQUIRED']);
  });

  test('a drive is reported only to a group of its organization, which the Groups service tells', async () => {
    const d = (await suite.client.createDrive({ drive: drive('DriverG001', '2026-11-09T08:00:00Z') })).drive!;
    const refused = await rejection(suite.client.reportDrive({ driveId: d.id, groupId: GLOBEX_GROUP }));
    assert.deepEqual([refused.code, refused.reason], [status.FAILED_PRECONDITION, 'GROUP_OF_ANOTHER_ORGANIZATION']);
    const unknown = await rejection(suite.client.reportDrive({ driveId: d.id, groupId: 424_242 }));
    assert.equal(unknown.reason, 'GROUP_OF_ANOTHER_ORGANIZATION', 'an unknown group is the same');
    assert.deepEqual(await suite.db.knex('drive_reports').where({ drive_id: d.id }), [], 'nothing reported');
    const reported = (await suite.client.reportDrive({ driveId: d.id, groupId: 9 })).reportedDrive!;
    assert.equal(reported.drive!.organizationId, 1);
  });

  test('a drive of another organization is invisible to every call; its events carry its organization', async () => {
    const globex = asOrganization(suite.client, 2);
    const theirs = (await globex.createDrive({ drive: drive('GlobexDrv1', '2026-11-10T08:00:00Z') })).drive!;
    assert.equal(theirs.organizationId, 2);
    await globex.reportDrive({ driveId: theirs.id, groupId: GLOBEX_GROUP });
    const ours = suite.client;
    const notFound = [
      () => ours.updateDrive({ drive: { ...theirs, description: 'taken over' } }),
      () => ours.reportDrive({ driveId: theirs.id, groupId: 9 }),
      () => ours.reviewReportedDrive({ driveId: theirs.id, status: 'approved', comment: '', reviewerEmail: '' }),
      () => ours.withdrawReport({ driveId: theirs.id, userId: 'GlobexDrv1' }),
      () => ours.deleteDrive({ driveId: theirs.id, userId: 'GlobexDrv1' }),
    ];
    for (const call of notFound) assert.equal((await rejection(call())).code, status.NOT_FOUND);
    assert.deepEqual((await list('GlobexDrv1')).drives, []);
    const reported = await ours.listReportedDrives({
      groupIds: [GLOBEX_GROUP],
      limit: 10,
      sortField: SortField.SORT_FIELD_MODIFIED,
    });
    assert.deepEqual(reported.reportedDrives, []);
    const theirList = await globex.listReportedDrives({
      groupIds: [GLOBEX_GROUP],
      limit: 10,
      sortField: SortField.SORT_FIELD_MODIFIED,
    });
    assert.deepEqual(
      theirList.reportedDrives.map((r) => [r.drive!.id, r.drive!.description]),
      [[theirs.id, theirs.description]],
      'untouched',
    );
    const events = await suite.db.knex('outbox').where({ user_id: 'GlobexDrv1' }).select('organization_id');
    assert.deepEqual(events, [{ organization_id: '2' }]);
  });

  test('while the Groups service does not answer, nothing is reported: UNAVAILABLE', async () => {
    const nobody = createGrpcClient(groupsV1.GroupsServiceClient, `127.0.0.1:${await freePort()}`, {
      defaultDeadlineMs: 2_000,
    });
    const cut = await startDrivesService(suite.db.knex, { client: nobody, close: async () => nobody.close() });
    try {
      const d = (await suite.client.createDrive({ drive: drive('DriverH001', '2026-11-11T08:00:00Z') })).drive!;
      const refused = await rejection(asOrganization(cut.client, 1).reportDrive({ driveId: d.id, groupId: 9 }));
      assert.deepEqual([refused.code, refused.reason], [status.UNAVAILABLE, 'GROUPS_UNAVAILABLE']);
      assert.deepEqual(await suite.db.knex('drive_reports').where({ drive_id: d.id }), []);
    } finally {
      await cut.close();
      nobody.close();
    }
  });
});
