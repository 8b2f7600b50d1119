import { renderReportedDrives, renderUserDrivesResults } from '@mileage/drive-json';
import type { drivesV1 } from '@mileage/proto';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderReportedRows, renderUserDriveRows } from './render';
import { toDrive, toReported, type CommentRow, type DriveRow, type ReportRow } from './rows';
import { WIRE_TIMESTAMPS } from './stamps';
import { generator } from './generator.fixture';

const pgTime = WIRE_TIMESTAMPS.getTypeParser(1184) as (text: string) => DriveRow['created_at'];

const TEXTS = ['Client visit', 'Ünïcödé 🚗 drive', 'quote " and \\ backslash', 'line\nbreak\ttab', '', '\u0001'];
const TIMES = [
  '2026-11-23 09:12:04.123+00',
  '2026-11-23 09:12:04.1+00',
  '2026-02-28 23:59:59+00',
  '1969-12-31 23:59:59.5+00',
];

function drive(g: ReturnType<typeof generator>, id: number): DriveRow {
  // Times as the list statements read them (wire Timestamps), or as knex reads them (Dates).
  const stamp = () => (g.next() < 0.8 ? pgTime(g.pick(TIMES)) : new Date(Date.parse('2026-11-20T10:00:00.250Z')));
  const location = () =>
    g.maybe({
      name: g.pick(TEXTS),
      lat: g.maybe('52.520008'),
      lon: g.maybe('-13.404954'),
      time: g.pick(['2026-11-23T08:00:00Z', '2026-11-23T08:00:00.5Z', '2026-11-23T08:00:00.123Z']),
      address: g.maybe({ country: 'US', state: 'IL', city: 'Chicago', street: g.pick(TEXTS), postalCode: '60601' }),
    });
  return {
    id: String(id),
    organization_id: '1',
    user_id: g.pick(['DriverA001', 'DriverB002']),
    started_at: stamp(),
    ended_at: stamp(),
    distance_amount: g.maybe(g.pick(['12.5', '0', '1000000.125'])),
    distance_units: g.maybe(g.pick(['km', 'mi'])),
    distance_discounted: g.maybe('3.25'),
    value_amount: g.maybe('3.75'),
    value_currency: g.maybe('EUR'),
    toll_amount: g.maybe('1.10'),
    toll_currency: g.maybe('USD'),
    parking_amount: g.maybe('2'),
    parking_currency: g.maybe('GBP'),
    description: g.maybe(g.pick(TEXTS)),
    entry: g.pick(['manual', 'automatic']),
    classification: g.maybe(g.pick(['business', 'personal', 'unclassified'])),
    purpose: g.maybe(g.pick(TEXTS)),
    start_location: location(),
    end_location: location(),
    created_at: stamp(),
    modified_at: stamp(),
  };
}

function tombstones(g: ReturnType<typeof generator>, n: number): drivesV1.Tombstone[] {
  return Array.from({ length: n }, (_, i) => ({
    driveId: 9000 + i,
    userId: 'DriverA001',
    groupId: 0,
    deleteTime: { seconds: 1_795_000_000 + Math.floor(g.next() * 1000), nanos: 0 },
  }));
}

test("a user's drives page rendered from its rows is byte for byte the page rendered from the messages", () => {
  for (let seed = 1; seed <= 200; seed++) {
    const g = generator(seed);
    const rows = Array.from({ length: 1 + Math.floor(g.next() * 20) }, (_, i) => drive(g, 100 + i));
    const dead = tombstones(g, seed % 3);
    const direct = renderUserDriveRows(rows, dead);
    const viaMessages = renderUserDrivesResults(rows.map(toDrive), dead);
    assert.equal(direct.toString(), viaMessages.toString(), `seed ${seed}`);
  }
  assert.equal(renderUserDriveRows([], []).toString(), '[]');
});

test('a reported drives page rendered from its rows is byte for byte the page from the messages, slots included', () => {
  for (let seed = 1; seed <= 200; seed++) {
    const g = generator(seed);
    const reported = Array.from({ length: 1 + Math.floor(g.next() * 20) }, (_, i) => {
      const row: DriveRow & ReportRow = {
        ...drive(g, 500 + i),
        drive_id: String(500 + i),
        group_id: '5',
        status: g.pick(['pending', 'approved', 'rejected']),
        reported_at: pgTime(g.pick(TIMES)),
        report_modified_at: pgTime(g.pick(TIMES)),
      };
      const comments: CommentRow[] = Array.from({ length: Math.floor(g.next() * 3) }, (_, c) => ({
        id: String(70 + c),
        drive_id: row.drive_id,
        text: g.pick(TEXTS),
        user_email: 'admin@example.com',
        created_at: pgTime(g.pick(TIMES)),
      }));
      return { row, comments };
    });
    const dead = tombstones(g, seed % 3);
    const direct = renderReportedRows(reported, dead);
    const viaMessages = renderReportedDrives(
      reported.map(({ row, comments }) => toReported(row, comments)),
      dead,
    );
    assert.equal(direct.resultsJson.toString(), viaMessages.resultsJson.toString(), `seed ${seed}`);
    assert.deepEqual(direct.driverSlots, viaMessages.driverSlots, `seed ${seed}`);
  }
});
