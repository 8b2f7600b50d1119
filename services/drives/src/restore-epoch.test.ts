import { status } from '@grpc/grpc-js';
import { drivesV1, PROTO_FILES } from '@mileage/proto';
import { millisToTimestamp, timestampToMillis } from '@mileage/runtime/formats';
import { type PromiseClient } from '@mileage/runtime/grpc';
import {
  asOrganization,
  createMigratedDatabase,
  rejection,
  startTestService,
  type MigratedDatabase,
  type TestService,
} from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openDatabase } from './database';
import { positionSurvives, RestoreEpochs, type EpochRecord } from './restore-epoch';
import { createServer } from './server';
import { startTestGroups, type TestGroups } from './service.fixture';

const at = (iso: string) => new Date(iso);
/** A database restored once (epoch B, to the newest change at 12:00) and then once more (C, to 11:00 of B's history). */
const history: EpochRecord[] = [
  { epoch: 'sys.1', restorePoint: null },
  { epoch: 'sys.2', restorePoint: at('2026-11-28T12:00:00Z') },
];

describe('positionSurvives', () => {
  test('a position of the current epoch is good, whenever it was read', () => {
    assert.equal(positionSurvives(history, 'sys.2', 'sys.2', at('2026-11-28T13:00:00Z')), true);
  });

  test('a position of an earlier epoch read no later than the restore point is good; one read after it is not', () => {
    assert.equal(positionSurvives(history, 'sys.2', 'sys.1', at('2026-11-28T11:59:59Z')), true);
    assert.equal(positionSurvives(history, 'sys.2', 'sys.1', at('2026-11-28T12:00:00Z')), true);
    assert.equal(positionSurvives(history, 'sys.2', 'sys.1', at('2026-11-28T12:00:00.001Z')), false);
  });

  test('every later restore counts: the earliest restore point decides', () => {
    const twice = [...history, { epoch: 'sys.3', restorePoint: at('2026-11-28T11:00:00Z') }];
    assert.equal(positionSurvives(twice, 'sys.3', 'sys.1', at('2026-11-28T10:59:00Z')), true);
    assert.equal(positionSurvives(twice, 'sys.3', 'sys.1', at('2026-11-28T11:30:00Z')), false);
    assert.equal(positionSurvives(twice, 'sys.3', 'sys.2', at('2026-11-28T11:30:00Z')), false);
  });

  test('an epoch the restored history never saw, and a restore into an empty database, refuse', () => {
    // A cursor of the timeline the restore went back before: the restored table does not hold it.
    assert.equal(positionSurvives(history, 'sys.2', 'sys.9', at('2026-11-28T01:00:00Z')), false);
    // Another database altogether (a new system identifier).
    assert.equal(positionSurvives(history, 'sys.2', 'other.1', at('2026-11-28T01:00:00Z')), false);
    const empty = [history[0]!, { epoch: 'sys.2', restorePoint: null }];
    assert.equal(positionSurvives(empty, 'sys.2', 'sys.1', at('2026-11-28T01:00:00Z')), false);
  });
});

describe('restore epochs over real gRPC and PostgreSQL', () => {
  let database: MigratedDatabase<ReturnType<typeof openDatabase>>;
  let groups: TestGroups;
  let service: TestService<drivesV1.DrivesServiceClient>;
  let client: PromiseClient<drivesV1.DrivesServiceClient>;
  // Read again on every call: the test moves the database to another epoch between calls.
  let epochs: RestoreEpochs;

  before(async () => {
    database = await createMigratedDatabase('drives_restore_epochs', (url) => openDatabase({ url }));
    groups = await startTestGroups();
    epochs = new RestoreEpochs(database.db.knex, 0);
    service = await startTestService({
      service: 'drives',
      implementation: createServer({ knex: database.db.knex, groups: groups.client, restoreEpochs: epochs }),
      protoFile: PROTO_FILES.drives,
      Client: drivesV1.DrivesServiceClient,
      deadlineMs: 10_000,
    });
    client = asOrganization(service.client, 1);
    for (let day = 1; day <= 3; day++) {
      const start = Date.UTC(2026, 9, day, 8);
      await client.createDrive({
        drive: {
          id: 0,
          userId: 'EpochUser1',
          startTime: millisToTimestamp(start),
          endTime: millisToTimestamp(start + 1_800_000),
          classification: drivesV1.Classification.CLASSIFICATION_BUSINESS,
          entry: drivesV1.Entry.ENTRY_MANUAL,
          organizationId: 0,
        },
      });
    }
  });

  after(async () => {
    await service.close();
    await groups.close();
    await database.close();
  });

  const page = (afterPosition?: drivesV1.PagePosition) =>
    client.listUserDrives({
      userId: 'EpochUser1',
      limit: 1,
      classification: drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_ALL,
      sortField: drivesV1.SortField.SORT_FIELD_MODIFIED,
      ...(afterPosition ? { afterPosition } : {}),
    });

  test('a page names the epoch it was read in; after a restore, only positions read by its restore point go on', async () => {
    const first = await page();
    const position = first.nextPosition!;
    const { rows } = await database.db.knex.raw<{ rows: { epoch: string }[] }>(
      `SELECT system_identifier::text AS epoch FROM pg_control_system()`,
    );
    assert.match(position.restoreEpoch ?? '', new RegExp(`^${rows[0]!.epoch}\\.[0-9]+$`));
    const readAt = timestampToMillis(position.readTime!);
    assert.ok(Math.abs(readAt - Date.now()) < 60_000, 'read now');
    assert.equal((await page(position)).drives.length, 1, 'in the same epoch: goes on');

    // The database as a restore leaves it: the epoch the cursor was made in is history, the current one is new, and its
    // restore point (the newest change the restored database held) is set where the test needs it.
    const current = position.restoreEpoch!;
    await database.db.knex('restore_epochs').where({ epoch: current }).update({ epoch: 'before-restore' });
    await epochs.view();
    await database.db
      .knex('restore_epochs')
      .where({ epoch: current })
      .update({ restore_point: new Date(readAt + 1_000) });
    const before = { ...position, restoreEpoch: 'before-restore' };
    assert.equal((await page(before)).drives.length, 1, 'read before the restore point: goes on');
    assert.ok((await page(before)).nextPosition?.restoreEpoch === current, 'its next page is of the current epoch');

    const afterRestorePoint = { ...before, readTime: millisToTimestamp(readAt + 2_000) };
    const refused = await rejection(page(afterRestorePoint));
    assert.equal(refused.code, status.FAILED_PRECONDITION);
    assert.equal(refused.reason, 'RESYNC_REQUIRED');
    const unknown = await rejection(page({ ...position, restoreEpoch: 'another-database.1' }));
    assert.equal(unknown.reason, 'RESYNC_REQUIRED', 'an epoch the restored history never saw');
    const { restoreEpoch: _e, readTime: _r, ...withoutEpoch } = position;
    assert.equal((await page(withoutEpoch)).drives.length, 1, 'a position from before epochs: as it always was');
  });
});
