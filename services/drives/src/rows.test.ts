import { timestampToIso, type WireTimestamp } from '@mileage/runtime/formats';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { iso, millis, toColumns, toDrive, type DriveRow } from './rows';
import { WIRE_TIMESTAMPS, wire } from './stamps';

const parse = WIRE_TIMESTAMPS.getTypeParser(1184) as (text: string) => WireTimestamp;

test('WIRE_TIMESTAMPS turns PostgreSQL timestamptz text into the wire Timestamp of what Date.toISOString prints', () => {
  const cases: [string, string][] = [
    ['2026-11-23 09:12:04.123+00', '2026-11-23T09:12:04.123Z'],
    ['2026-11-23 09:12:04.12+00', '2026-11-23T09:12:04.120Z'],
    ['2026-11-23 09:12:04.1+00', '2026-11-23T09:12:04.100Z'],
    ['2026-11-23 09:12:04+00', '2026-11-23T09:12:04.000Z'],
    ['2024-02-29 23:59:59.999+00', '2024-02-29T23:59:59.999Z'],
    // A session in another time zone: through pg's own parser.
    ['2026-11-23 03:12:04.5-06', '2026-11-23T09:12:04.500Z'],
    ['2026-11-23 14:42:04.5+05:30', '2026-11-23T09:12:04.500Z'],
    ['1969-12-31 23:59:59.25+00', '1969-12-31T23:59:59.250Z'],
  ];
  for (const [text, expected] of cases) {
    const t = parse(text);
    assert.equal(timestampToIso(t), expected, text);
    assert.ok(t.nanos % 1_000_000 === 0, `${text}: whole milliseconds`);
    assert.equal(t.seconds * 1000 + t.nanos / 1e6, Date.parse(expected), text);
  }
  // Other types keep pg's parsers.
  assert.equal((WIRE_TIMESTAMPS.getTypeParser(23) as (t: string) => number)('42'), 42);
});

test('a stamp read as a Date or as a wire Timestamp gives the same time', () => {
  const date = new Date('2026-11-23T09:12:04.123Z');
  const t = parse('2026-11-23 09:12:04.123+00');
  assert.deepEqual(wire(date), t);
  assert.equal(wire(t), t);
  assert.equal(iso(date), iso(t));
  assert.equal(millis(date), millis(t));
});

test('a drive row to the message and back: times as wire Timestamps, stored location times as the API text', () => {
  const row: DriveRow = {
    id: '7',
    organization_id: '1',
    user_id: 'DriverA001',
    started_at: parse('2026-11-23 08:00:00+00'),
    ended_at: new Date('2026-11-23T08:30:00.500Z'),
    distance_amount: null,
    distance_units: null,
    distance_discounted: null,
    value_amount: null,
    value_currency: null,
    toll_amount: null,
    toll_currency: null,
    parking_amount: null,
    parking_currency: null,
    description: null,
    entry: 'manual',
    classification: 'business',
    purpose: null,
    start_location: { name: 'Office', lat: null, lon: null, time: '2026-11-23T08:00:00Z', address: null },
    end_location: { name: 'Client', lat: '1', lon: '2', time: '2026-11-23T08:30:00.5Z', address: null },
    created_at: parse('2026-11-23 09:00:00.001+00'),
    modified_at: parse('2026-11-23 09:00:00.002+00'),
  };
  const drive = toDrive(row);
  assert.deepEqual(drive.startTime, { seconds: 1_795_420_800, nanos: 0 });
  assert.deepEqual(drive.endTime, { seconds: 1_795_422_600, nanos: 500_000_000 });
  assert.deepEqual(drive.start?.time, { seconds: 1_795_420_800, nanos: 0 });
  assert.deepEqual(drive.end?.time, { seconds: 1_795_422_600, nanos: 500_000_000 });
  const columns = toColumns(drive);
  assert.equal(columns.started_at, '2026-11-23T08:00:00.000Z');
  assert.equal(columns.ended_at, '2026-11-23T08:30:00.500Z');
  assert.equal(JSON.parse(columns.end_location!).time, '2026-11-23T08:30:00.500Z');
  // A location without a time stays without one.
  const noTime = toDrive({ ...row, start_location: { ...row.start_location!, time: undefined as unknown as string } });
  assert.equal('time' in noTime.start!, false);
  assert.equal(JSON.parse(toColumns(noTime).start_location!).time, undefined);
});
