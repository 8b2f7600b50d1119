import assert from 'node:assert/strict';
import { test } from 'node:test';
import { drivesV1 } from '@mileage/proto';
import { millisToTimestamp } from '@mileage/runtime/formats';
import {
  renderReportedDrives,
  renderUserDrivesResults,
  reportedDrivesResultsChunks,
  toReportedDriveSchema,
  toReportedDriveTombstoneSchema,
  userDrivesResults,
  type DriverSchema,
} from './index';

/** A small deterministic generator: the same drives on every run, with every optional field both set and absent. */
function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

const TEXTS = [
  '',
  'Kundentermin Zürich',
  'line\nbreak "quoted" \\ back',
  '😀 emoji',
  '\u2028 separator',
  'a'.repeat(300),
];

function drives(count: number, seed = 1): drivesV1.Drive[] {
  const next = random(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(next() * xs.length)]!;
  const maybe = <T>(v: T) => (next() < 0.5 ? v : undefined);
  const at = (ms: number) => millisToTimestamp(1_700_000_000_000 + Math.floor(ms));
  return Array.from({ length: count }, (_, i) => {
    const location = () =>
      maybe({
        name: pick(TEXTS),
        ...(next() < 0.5 ? { lat: '47.3769', lon: '-8.5417' } : {}),
        time: at(next() * 1e9),
        ...(next() < 0.5
          ? { address: { country: 'CH', state: 'ZH', city: pick(TEXTS), street: pick(TEXTS), postalCode: '8001' } }
          : {}),
      });
    const money = () => maybe({ amount: Math.round(next() * 1e6) / 100, currency: pick(['EUR', 'USD', 'CHF']) });
    const distance = maybe({ amount: next() * 500, units: pick(['km', 'mi']), discounted: maybe(next() * 10) });
    const description = maybe(pick(TEXTS));
    const purpose = maybe(pick(TEXTS));
    const value = money();
    const tollFees = money();
    const parkingFees = money();
    const start = location();
    const end = location();
    return {
      id: 1000 + i,
      userId: pick(['DriverA', 'DriverB', 'DriverC']),
      organizationId: 1,
      createTime: at(next() * 1e9),
      updateTime: at(1e9 - i * 1000),
      startTime: at(next() * 1e9),
      endTime: at(next() * 1e9),
      classification: pick([0, 1, 2, 3]),
      entry: pick([1, 2]),
      ...(distance && { distance }),
      ...(value && { value }),
      ...(tollFees && { tollFees }),
      ...(parkingFees && { parkingFees }),
      ...(description !== undefined && { description }),
      ...(purpose !== undefined && { purpose }),
      ...(start && { start }),
      ...(end && { end }),
    } as drivesV1.Drive;
  });
}

function reported(count: number, seed = 2): drivesV1.ReportedDrive[] {
  const next = random(seed);
  return drives(count, seed).map((drive, i) => ({
    drive,
    groupId: 7,
    status: ['pending', 'approved', 'rejected'][i % 3]!,
    reportTime: drive.createTime!,
    updateTime: drive.updateTime!,
    reviewComments: Array.from({ length: Math.floor(next() * 3) }, (_, c) => ({
      id: i * 10 + c,
      text: TEXTS[c % TEXTS.length]!,
      createTime: drive.updateTime!,
      userEmail: 'admin@example.com',
    })),
  }));
}

const tombstone = (driveId: number, updateTime: drivesV1.Drive['updateTime']): drivesV1.Tombstone => ({
  driveId,
  userId: 'DriverA',
  groupId: 7,
  deleteTime: updateTime!,
});

test('a rendered page of user drives is the JSON of the same page as objects, byte for byte', () => {
  const page = drives(300);
  const rendered = renderUserDrivesResults(page, []);
  assert.equal(rendered.toString('utf8'), JSON.stringify(userDrivesResults(page, [])));
  // Survives the wire: the rendered bytes decode to the same text after a protobuf round trip.
  const wire = drivesV1.ListUserDrivesResponse.decode(
    drivesV1.ListUserDrivesResponse.encode({
      drives: [],
      tombstones: [],
      hasMore: true,
      resultsJson: rendered,
    }).finish(),
  );
  assert.deepEqual(Buffer.from(wire.resultsJson), rendered);
  assert.equal(JSON.parse(rendered.toString()).length, 300);
});

test('tombstones are merged into a user drives page by modified time, then drive id, both descending', () => {
  const page = drives(3);
  const [first, second] = page;
  // One tombstone at the time of the first drive with a larger id (listed before it), one older than all.
  const tombstones = [tombstone(first!.id + 50, first!.updateTime), tombstone(5, millisToTimestamp(1_600_000_000_000))];
  const results = JSON.parse(renderUserDrivesResults(page, tombstones).toString()) as { drive_id: number }[];
  assert.deepEqual(
    results.map((r) => r.drive_id),
    [first!.id + 50, first!.id, second!.id, page[2]!.id, 5],
  );
});

test('a rendered page of reported drives with its drivers is the JSON of the page as objects, byte for byte', () => {
  const page = reported(200);
  const rendered = renderReportedDrives(page, []);
  assert.equal(rendered.driverSlots.length, 200);
  const driverOf = (id: string, at: number): DriverSchema => ({
    id,
    name: id === 'DriverC' ? null : `Name "${id}" 😀`,
    email: `${id.toLowerCase()}@example.com`,
    status: id === 'DriverB' ? 'inactive' : 'active',
    timezone_offset: (at % 5) - 2.5,
  });
  const millis = (t: drivesV1.DriverSlot['driverTime']) => Number(t!.seconds) * 1000 + t!.nanos / 1e6;
  // Across the wire: the slots' byte offsets hold after a protobuf round trip.
  const wire = drivesV1.ListReportedDrivesResponse.decode(
    drivesV1.ListReportedDrivesResponse.encode({
      reportedDrives: [],
      tombstones: [],
      hasMore: false,
      ...rendered,
    }).finish(),
  );
  const chunks = reportedDrivesResultsChunks(wire, (id, at) => Buffer.from(JSON.stringify(driverOf(id, millis(at)))));
  const expected = JSON.stringify(
    page.map((r) => toReportedDriveSchema(r, driverOf(r.drive!.userId, millis(r.drive!.endTime)))),
  );
  assert.equal(Buffer.concat(chunks).toString('utf8'), expected);
});

test('a page of reported drives merges its tombstones in list order; a tombstone has no driver', () => {
  const page = reported(2);
  const withdrawn = tombstone(page[0]!.drive!.id + 1, page[0]!.updateTime);
  const rendered = renderReportedDrives(page, [withdrawn]);
  assert.deepEqual(
    rendered.driverSlots.map((slot) => slot.driverId),
    [page[0]!.drive!.userId, page[1]!.drive!.userId],
  );
  const text = Buffer.concat(reportedDrivesResultsChunks(rendered, () => Buffer.from('null'))).toString();
  const results = JSON.parse(text) as { id: string; deleted?: true }[];
  assert.deepEqual(
    results.map((r) => r.id),
    [String(withdrawn.driveId), String(page[0]!.drive!.id), String(page[1]!.drive!.id)],
  );
  assert.deepEqual(results[0], toReportedDriveTombstoneSchema(withdrawn));
});

test('a driver slot that does not point at a placeholder, in order, is refused', () => {
  const rendered = renderReportedDrives(reported(2), []);
  const [first, second] = rendered.driverSlots;
  for (const driverSlots of [
    [second!, first!],
    [{ ...first!, offset: first!.offset - 1 }, second!],
  ])
    assert.throws(() => reportedDrivesResultsChunks({ ...rendered, driverSlots }, () => Buffer.from('null')), /slot/);
});

test('an empty page renders as an empty array', () => {
  assert.equal(renderUserDrivesResults([], []).toString(), '[]');
  const empty = renderReportedDrives([], []);
  assert.equal(Buffer.concat(reportedDrivesResultsChunks(empty, () => Buffer.alloc(0))).toString(), '[]');
});
