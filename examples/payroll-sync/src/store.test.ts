// The export's store: the CSV is a function of the rows, written atomically and only when its bytes change.
import { parse } from 'csv-parse/sync';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { reportedDrive } from './fixtures.test-helpers';
import { COLUMNS, PayrollStore } from './store';

let dir: string;
let csv: string;
let state: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'payroll-store-'));
  csv = path.join(dir, 'out', 'drives.csv');
  state = path.join(dir, 'out', 'drives.state.json');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const T = (s: number) => new Date(Date.UTC(2026, 10, 2, 10, 0, s)).toISOString();
const records = () => parse(readFileSync(csv, 'utf8'), { columns: true }) as Record<string, string>[];

test('rows become CSV columns in drive id order; a second save with nothing new writes nothing', async () => {
  const store = new PayrollStore(csv, state, '1');
  const target = store.target();
  await target.reset('initial');
  await target.upsert('10', reportedDrive(10, T(1)));
  await target.upsert('9', reportedDrive(9, T(2), { status: 'approved' }));
  await target.commit({ version: 1, watermark: T(2) }, { full: true, upserts: 2, deletes: 0 });
  assert.deepEqual(store.lastSave, { csvChanged: true, stateChanged: true });
  const rows = records();
  assert.deepEqual(Object.keys(rows[0]!), [...COLUMNS]);
  assert.deepEqual(
    rows.map((r) => [r.drive_id, r.status]),
    [
      ['9', 'approved'],
      ['10', 'submitted'],
    ],
  );
  assert.equal(rows[0]!.value, '7.25');
  assert.equal(rows[0]!.toll_fees, '2.50');
  assert.equal(rows[0]!.parking_fees, '');
  assert.equal(rows[0]!.business_distance, '10');
  assert.equal(rows[0]!.started_at, '2026-11-01T08:00:00.000Z');
  const before = [statSync(csv).mtimeMs, statSync(state).mtimeMs];

  const again = new PayrollStore(csv, state, '1');
  assert.deepEqual(again.syncState, { version: 1, watermark: T(2) });
  await again.target().commit({ version: 1, watermark: T(2) }, { full: false, upserts: 0, deletes: 0 });
  assert.deepEqual(again.lastSave, { csvChanged: false, stateChanged: false });
  assert.deepEqual([statSync(csv).mtimeMs, statSync(state).mtimeMs], before);
  assert.deepEqual(readdirSync(path.dirname(csv)).sort(), ['drives.csv', 'drives.state.json'], 'no temp file left');
});

test('a change updates its row, a tombstone removes it, a reset replaces everything', async () => {
  const store = new PayrollStore(csv, state, '1');
  const t = store.target();
  await t.reset('initial');
  for (const id of [1, 2, 3]) await t.upsert(String(id), reportedDrive(id, T(id)));
  await t.commit({ version: 1, watermark: T(3) }, { full: true, upserts: 3, deletes: 0 });
  await t.upsert('2', reportedDrive(2, T(5), { status: 'rejected' }));
  await t.remove('3', { id: '3', deleted: true, modified: T(6) });
  await t.commit({ version: 1, watermark: T(6) }, { full: false, upserts: 1, deletes: 1 });
  assert.deepEqual(
    records().map((r) => `${r.drive_id}:${r.status}`),
    ['1:submitted', '2:rejected'],
  );
  await t.reset('resync-required');
  await t.upsert('7', reportedDrive(7, T(7)));
  await t.commit({ version: 1, watermark: T(7) }, { full: true, upserts: 1, deletes: 0 });
  assert.deepEqual(
    records().map((r) => r.drive_id),
    ['7'],
  );
});

test('a webhook removal is kept until the feed catches up: an older listing does not bring the row back', async () => {
  const store = new PayrollStore(csv, state, '1');
  const t = store.target();
  await t.reset('initial');
  await t.upsert('4', reportedDrive(4, T(4)));
  await t.upsert('5', reportedDrive(5, T(5)));
  await t.commit({ version: 1, watermark: T(5) }, { full: true, upserts: 2, deletes: 0 });
  // A withdrawal older than the row (a stale or reordered delivery) leaves it.
  assert.equal(store.removeFromEvent('5', T(3)), false);
  assert.equal(store.removeFromEvent('4', T(9)), true);
  assert.deepEqual(
    records().map((r) => r.drive_id),
    ['5'],
  );
  // A full resync that still lists drive 4 as it was (the feed had not caught up) does not resurrect it.
  await t.reset('resync-required');
  await t.upsert('4', reportedDrive(4, T(4)));
  await t.upsert('5', reportedDrive(5, T(5)));
  await t.commit({ version: 1, watermark: T(5) }, { full: true, upserts: 2, deletes: 0 });
  assert.deepEqual(
    records().map((r) => r.drive_id),
    ['5'],
  );
  // Reported again later: it is back; and once the watermark passes the removal, the marker is gone.
  await t.upsert('4', reportedDrive(4, T(12)));
  await t.commit({ version: 1, watermark: T(12) }, { full: false, upserts: 1, deletes: 0 });
  assert.deepEqual(
    records().map((r) => r.drive_id),
    ['4', '5'],
  );
  assert.deepEqual(JSON.parse(readFileSync(state, 'utf8')).removed, {});
});

test('a note that starts like a formula stays text; commas, quotes and new lines survive', async () => {
  const store = new PayrollStore(csv, state, '1');
  const t = store.target();
  const drive = reportedDrive(1, T(1));
  await t.upsert('1', { ...drive, details: { ...drive.details, description: '=HYPERLINK("http://x","pay me")' } });
  await t.upsert('2', { ...drive, id: '2', details: { ...drive.details, description: 'a, "b"\nc' } });
  await t.commit({ version: 1, watermark: T(1) }, { full: true, upserts: 2, deletes: 0 });
  const [first, second] = records();
  assert.equal(first!.notes, `'=HYPERLINK("http://x","pay me")`);
  assert.equal(second!.notes, 'a, "b"\nc');
});

test('a walk that fails before its commit changes nothing, also when a removal is saved meanwhile', async () => {
  const store = new PayrollStore(csv, state, '1');
  const first = store.target();
  for (const id of [1, 2, 3]) await first.upsert(String(id), reportedDrive(id, T(id)));
  await first.commit({ version: 1, watermark: T(3) }, { full: true, upserts: 3, deletes: 0 });
  const failed = store.target();
  await failed.reset('resync-required');
  await failed.upsert('9', reportedDrive(9, T(9)));
  // The walk failed here (no commit); a webhook removal is saved afterwards.
  store.removeFromEvent('2', T(8));
  assert.deepEqual(
    records().map((r) => r.drive_id),
    ['1', '3'],
  );
  assert.deepEqual(store.syncState, { version: 1, watermark: T(3) });
});

test('a state file of another group is refused', () => {
  new PayrollStore(csv, state, '1').save();
  assert.throws(() => new PayrollStore(csv, state, '2'), /holds group 1, not 2/);
  writeFileSync(state, JSON.stringify({ version: 9 }));
  assert.throws(() => new PayrollStore(csv, state, '1'), /unknown state version/);
});
