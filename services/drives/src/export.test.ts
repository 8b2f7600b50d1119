// A person's own copy (ExportUserDrives) over real gRPC and PostgreSQL: every classification, first recorded first,
// and consistent while drives change between pages.
import { drivesV1 } from '@mileage/proto';
import { dateToTimestamp } from '@mileage/runtime/formats';
import { asOrganization, rejection, serviceSuite } from '@mileage/runtime/testing';
import { status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDatabase } from './database';
import { startDrivesService, startTestGroups } from './service.fixture';

const { Classification, Entry } = drivesV1;

const suite = serviceSuite({
  prefix: 'drives_export',
  open: (url) => openDatabase({ url }),
  start: async (db) => {
    const groups = await startTestGroups();
    const service = await startDrivesService(db.knex, groups);
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

const CLASSIFICATIONS = [
  Classification.CLASSIFICATION_BUSINESS,
  Classification.CLASSIFICATION_PERSONAL,
  Classification.CLASSIFICATION_UNCLASSIFIED,
];

async function record(userId: string, count: number, organizationId = 1): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = new Date(Date.UTC(2026, 10, 1, 8) + i * 3_600_000);
    const { drive } = await suite.client.createDrive(
      {
        drive: {
          id: 0,
          userId,
          organizationId,
          startTime: dateToTimestamp(start),
          endTime: dateToTimestamp(new Date(start.getTime() + 1_800_000)),
          classification: CLASSIFICATIONS[i % CLASSIFICATIONS.length]!,
          distance: { amount: 10 + i, units: 'mi' },
          entry: Entry.ENTRY_MANUAL,
        },
      },
      { organizationId },
    );
    ids.push(drive!.id);
  }
  return ids;
}

/** Reads a copy page by page, calling `between` after each page; the drives' lines in order. */
async function readCopy(userId: string, pageSize: number, between: (page: number) => Promise<void> = async () => {}) {
  const lines: { drive: { drive_id: number; classification: string; description: string | null } }[] = [];
  let afterId = 0;
  let upToId = 0;
  for (let page = 0; ; page++) {
    const answer = await suite.client.exportUserDrives({ userId, afterId, upToId, pageSize });
    const text = Buffer.from(answer.drivesNdjson).toString('utf8');
    const parsed = text
      ? text
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l) as (typeof lines)[number])
      : [];
    assert.equal(parsed.length, answer.count);
    lines.push(...parsed);
    ({ lastId: afterId, upToId } = answer);
    if (!answer.hasMore) return lines;
    await between(page);
  }
}

test('the copy holds every drive of the user, every classification, first recorded first, and nobody else’s', async () => {
  const mine = await record('ExportMe01', 7);
  await record('ExportThem', 2);
  await record('ExportMe01', 1, 2); // the same id pattern in another organization: never in this one's copy
  const lines = await readCopy('ExportMe01', 3);
  assert.deepEqual(
    lines.map((l) => l.drive.drive_id),
    mine,
  );
  assert.deepEqual(
    new Set(lines.map((l) => l.drive.classification)),
    new Set(['business', 'personal', 'unclassified']),
  );
});

test('a drive changed, deleted or recorded between pages is neither lost nor doubled', async () => {
  const mine = await record('ExportMe02', 9);
  const lines = await readCopy('ExportMe02', 2, async (page) => {
    if (page !== 0) return;
    // The first and the last drive change (their modified time moves to now), and a new drive is recorded.
    for (const id of [mine[0]!, mine[8]!])
      await suite.db.knex.raw(`UPDATE drives SET description = 'changed', modified_at = now() WHERE id = ?`, [id]);
    await record('ExportMe02', 1);
  });
  assert.deepEqual(
    lines.map((l) => l.drive.drive_id),
    mine,
  );
  assert.equal(lines[8]!.drive.description, 'changed');
});

test('a user without drives gets an empty copy; a bad page size is refused', async () => {
  const answer = await suite.client.exportUserDrives({ userId: 'NoDrives01', afterId: 0, upToId: 0, pageSize: 0 });
  assert.deepEqual([answer.count, answer.hasMore, answer.drivesNdjson.length], [0, false, 0]);
  const refused = await rejection(
    suite.client.exportUserDrives({ userId: 'NoDrives01', afterId: 0, upToId: 0, pageSize: 5_000 }),
  );
  assert.equal(refused.code, status.INVALID_ARGUMENT);
});
