// The Drives service's part of an organization export against real PostgreSQL and a store on disk: both files from
// one pass over the organization's reported drives, in pages, the other organization's drives in neither.
import { shareSnapshot, snapshotInOrganization } from '@mileage/runtime/database';
import { createMigratedDatabase } from '@mileage/runtime/testing';
import { LocalArchiveStore } from '@mileage/runtime/storage';
import { joinSnapshot } from '@mileage/runtime/worker';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { text } from 'node:stream/consumers';
import { createGunzip } from 'node:zlib';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { openDatabase } from './database';
import { writeDrivesExportPart } from './export-part';
import { csvLine } from './csv';
import { EXPORT_CSV_COLUMNS } from './export-lines';
import { EXPORT_PAGE_ROWS, renderedReportedDrivePages } from './export-pages';
import { reportedDriveItemOf } from './render';
import type { CommentRow, DriveRow, ReportRow } from './rows';
import { WIRE_TIMESTAMPS } from './stamps';
import { generator } from './generator.fixture';

const EXPORT_ID = '00000000-0000-4000-8000-0000000000e1';
/** A stored part's text: its gzip members, decompressed. */
const partText = async (store: LocalArchiveStore, exportId: string, name: string) =>
  text((await store.get(`exports/${exportId}/parts/${name}`)).pipe(createGunzip()));
/** More than two pages, so that the pages' seams are crossed. */
const DRIVES = 2 * EXPORT_PAGE_ROWS + 345;
let database: Awaited<ReturnType<typeof createMigratedDatabase<ReturnType<typeof openDatabase>>>>;
const root = mkdtempSync(path.join(tmpdir(), 'drives-export-part-'));

before(async () => {
  database = await createMigratedDatabase('drives_export_part', (url) => openDatabase({ url }));
  for (const organization of [1, 2])
    await database.db.knex.transaction(async (trx) => {
      await trx.raw(`SELECT set_config('mileage.organization_id', ?, true)`, [String(organization)]);
      await trx.raw(
        `INSERT INTO drives (organization_id, user_id, started_at, ended_at, distance_amount, distance_units, entry,
                             classification, description, created_at, modified_at)
         SELECT ?, 'U00000000' || (g % 7), t, t + interval '20 minutes', 10 + g % 50, 'mi', 'manual', 'business',
                CASE WHEN g % 3 = 0 THEN 'Visit, "North" site' || chr(10) || 'and back' END, t, t
           FROM (SELECT g, timestamptz '2026-11-01 08:00:00.123+00' + interval '1 hour' * g AS t
                   FROM generate_series(1, ?) g) s`,
        [organization, DRIVES],
      );
      await trx.raw(
        `INSERT INTO drive_reports (organization_id, drive_id, group_id, status, reported_at, modified_at, ended_at)
         SELECT organization_id, id, 5, 'submitted', modified_at, modified_at, ended_at FROM drives
          WHERE organization_id = ?`,
        [organization],
      );
      await trx.raw(
        `INSERT INTO review_comments (organization_id, drive_id, text, user_email)
         SELECT organization_id, drive_id, n || ': looks right, "mostly"', 'admin@example.com' FROM drive_reports,
                generate_series(1, 2) n
          WHERE organization_id = ? AND drive_id % 10 = 0 ORDER BY drive_id, n`,
        [organization],
      );
    });
});
after(async () => {
  await database.close();
  rmSync(root, { recursive: true, force: true });
});

interface ExportedLine {
  id: string;
  driver: { id: string };
  details: { description: string | null; distance: { amount: number } };
  created: string;
  review_comments: { text: string }[];
}

test("an organization's reported drives, as JSON Lines and CSV, the same drives in the same order", async () => {
  const store = new LocalArchiveStore(root);
  const scheduled: boolean[] = [];
  const files = await writeDrivesExportPart(database.db.knex, store, 1, EXPORT_ID, undefined, (idle) =>
    scheduled.push(idle),
  );
  assert.deepEqual(scheduled, [true], "rendered in Linux's idle scheduling class");
  assert.deepEqual(
    files.map((f) => [f.name, f.rows]),
    [
      ['reported_drives.jsonl', DRIVES],
      ['reported_drives.csv', DRIVES],
    ],
  );
  const jsonl = await partText(store, EXPORT_ID, 'reported_drives.jsonl');
  const lines = jsonl
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as ExportedLine);
  assert.equal(Buffer.byteLength(jsonl), files[0]!.sizeBytes);
  assert.equal(files[0]!.sha256, createHash('sha256').update(jsonl).digest('hex'));
  assert.equal(files[0]!.gzipBytes, await store.size(`exports/${EXPORT_ID}/parts/reported_drives.jsonl`));
  assert.equal(lines.length, DRIVES);
  const ids = lines.map((l) => Number(l.id));
  assert.deepEqual(
    ids,
    [...ids].sort((a, b) => a - b),
    'in drive id order',
  );
  assert.equal(new Set(ids).size, DRIVES, 'no drive twice across the pages');
  const third = lines[2]!;
  assert.equal(third.details.description, 'Visit, "North" site\nand back');
  assert.equal(third.created, '2026-11-01T11:00:00.123Z');
  assert.match(third.driver.id, /^U00000000\d$/);
  // Every tenth drive has two comments, the last of each page's drives too (the pages' comments are read by range).
  assert.deepEqual(
    lines.filter((l) => l.review_comments.length).map((l) => l.review_comments.map((c) => `${l.id} ${c.text}`)),
    ids.filter((id) => id % 10 === 0).map((id) => [`${id} 1: looks right, "mostly"`, `${id} 2: looks right, "mostly"`]),
  );
  assert.ok(ids.includes(EXPORT_PAGE_ROWS) && ids.includes(2 * EXPORT_PAGE_ROWS), 'pages end on commented drives');

  const csv = await partText(store, EXPORT_ID, 'reported_drives.csv');
  assert.equal(Buffer.byteLength(csv), files[1]!.sizeBytes);
  assert.ok(csv.startsWith('id,driver_id,status,reported_at,modified,started_at,ended_at,'));
  assert.ok(
    csv.includes(
      `${third.id},${third.driver.id},submitted,2026-11-01T11:00:00.123Z,2026-11-01T11:00:00.123Z,,,business,,` +
        `"Visit, ""North"" site\nand back",${third.details.distance.amount},mi,`,
    ),
  );
  assert.ok(csv.includes(`,"1: looks right, ""mostly"" | 2: looks right, ""mostly"""\n`));
  // Every record starts with its drive's id, in the JSON Lines' order (a quoted break continues a record).
  const records = csv.split('\n').filter((line) => /^\d+,U00000000\d,/.test(line));
  assert.deepEqual(
    records.map((r) => Number(r.split(',')[0])),
    ids,
  );
});

test('the next page is asked for before the worker pauses: PostgreSQL reads it during the pause', async () => {
  const knex = database.db.knex;
  const events: string[] = [];
  let drives = 0;
  await snapshotInOrganization(knex, 1, async (trx) => {
    const snapshot = await joinSnapshot(await shareSnapshot(knex, trx, 1));
    try {
      // The pages' reads (their comments are read after each page's rows, with them).
      const recorded = {
        columnTypes: (query: string) => snapshot.columnTypes(query),
        copyRows: (query: string, into?: Parameters<typeof snapshot.copyRows>[1]) => {
          if (query.includes(' FROM drive_reports ')) events.push('read in text');
          return snapshot.copyRows(query, into);
        },
        copyBinaryRows: (query: string, into?: Parameters<typeof snapshot.copyBinaryRows>[1]) => {
          events.push('read');
          return snapshot.copyBinaryRows(query, into);
        },
      };
      const cycle = { pace: async () => void events.push('pause') };
      for await (const page of renderedReportedDrivePages(recorded, 1, cycle)) drives += page.rows;
    } finally {
      await snapshot.close();
    }
  });
  assert.equal(drives, DRIVES);
  // Three pages: the second asked for before the first pause, the third before the second; the last page is short.
  assert.deepEqual(events, ['read', 'read', 'pause', 'read', 'pause', 'pause']);
});

/** Texts that COPY escapes or JSON and CSV quote: `\N` as text is not NULL. */
const TEXTS = [
  'Client visit',
  'Ünïcödé 🚗 drive',
  'quote " and \\ backslash',
  'line\nbreak\ttab\r',
  'control \u0001\u001f\u007f',
  '\\N',
  '',
  'a,b',
];
const TIMES = [
  '2026-11-23 09:12:04.123+00',
  '2026-11-23 09:12:04.1+00',
  '2026-02-28 23:59:59+00',
  '1969-12-31 23:59:59.5+00',
];

/** A stored location of any shape the column holds: keys missing, nulls, an address with some parts only. */
function location(g: ReturnType<typeof generator>): string | null {
  if (g.next() < 0.25) return null;
  const stored: Record<string, unknown> = {};
  if (g.next() < 0.9) stored.name = g.maybe(g.pick(TEXTS));
  if (g.next() < 0.8) stored.lat = g.maybe('52.520008');
  if (g.next() < 0.8) stored.lon = g.maybe(g.next() < 0.9 ? '-13.404954' : -13.404954);
  if (g.next() < 0.8) stored.time = g.pick(['2026-11-23T08:00:00Z', '2026-11-23T08:00:00.5Z', '2026-02-30T08:00:00Z']);
  // Keys place() does not read, and values it reads that are not strings: the parsed path's cases.
  if (g.next() < 0.1) stored.extra = g.pick(['x', { nested: true }, 7]);
  if (g.next() < 0.05) stored.time = null;
  if (g.next() < 0.8) {
    const address: Record<string, string> = {};
    for (const key of ['country', 'state', 'city', 'street', 'postalCode'])
      if (g.next() < 0.7) address[key] = g.pick(TEXTS);
    stored.address = g.next() < 0.05 ? 'not an object' : g.maybe(address);
  }
  return JSON.stringify(stored);
}

/** The CSV's columns as fields of the API's representation of a reported drive (ReportedDriveSchema). */
function csvFields(item: ReturnType<typeof reportedDriveItemOf>['body'], driver: string): (string | number)[] {
  const d = item.details;
  return [
    item.id,
    driver,
    item.status,
    item.created,
    item.modified,
    d.start?.time ?? '',
    d.end?.time ?? '',
    d.classification ?? '',
    d.purpose ?? '',
    d.description ?? '',
    d.distance?.amount ?? '',
    d.distance?.units ?? '',
    d.value?.amount ?? '',
    d.toll_fees?.amount ?? '',
    d.parking_fees?.amount ?? '',
    d.value?.currency ?? d.toll_fees?.currency ?? d.parking_fees?.currency ?? '',
    d.start?.name ?? '',
    d.end?.name ?? '',
    item.review_comments.map((c) => c.text).join(' | '),
  ];
}

test("every line is the API's representation of its drive, whatever the texts, numbers and locations", async () => {
  const ORGANIZATION = 3;
  const g = generator(43);
  const money = () => (g.next() < 0.5 ? [null, null] : [g.pick(['0', '875', '12']), g.pick(['USD', 'CAD', 'GBP'])]);
  await database.db.knex.transaction(async (trx) => {
    await trx.raw(`SELECT set_config('mileage.organization_id', ?, true)`, [String(ORGANIZATION)]);
    for (let i = 0; i < 600; i++) {
      const distance =
        g.next() < 0.2 ? [null, null] : [g.pick(['12.50', '0.00', '99999999.99', '7']), g.pick(['mi', 'km'])];
      const [value, valueCurrency] = money();
      const [toll, tollCurrency] = money();
      const [parking, parkingCurrency] = money();
      const time = g.pick(TIMES);
      const [drive] = await trx('drives')
        .insert({
          organization_id: ORGANIZATION,
          user_id: g.pick(['DriverA001', 'DriverB002']),
          started_at: time,
          ended_at: time,
          distance_amount: distance[0],
          distance_units: distance[1],
          distance_discounted: distance[0] === null ? null : g.maybe('3'),
          value_amount: value,
          value_currency: valueCurrency,
          toll_amount: toll,
          toll_currency: tollCurrency,
          parking_amount: parking,
          parking_currency: parkingCurrency,
          description: g.maybe(g.pick(TEXTS)),
          entry: g.pick(['manual', 'automatic']),
          classification: g.maybe(g.pick(['business', 'personal', 'unclassified'])),
          purpose: g.maybe(g.pick(TEXTS)),
          start_location: location(g),
          end_location: location(g),
          created_at: time,
          modified_at: time,
        })
        .returning<{ id: string }[]>('id');
      await trx('drive_reports').insert({
        organization_id: ORGANIZATION,
        drive_id: drive!.id,
        group_id: 7,
        status: g.pick(['submitted', 'approved', 'rejected']),
        reported_at: g.pick(TIMES),
        modified_at: g.pick(TIMES),
        ended_at: time,
      });
      for (let c = Math.floor(g.next() * 3); c > 0; c--)
        await trx('review_comments').insert({
          organization_id: ORGANIZATION,
          drive_id: drive!.id,
          text: g.pick(TEXTS) || 'not empty',
          user_email: 'reviewer@example.com',
          created_at: g.pick(TIMES),
        });
    }
  });

  // The API's rendering of the same rows (reportedDriveItemOf), read as its list statements read them.
  const client = (await database.db.knex.client.acquireConnection()) as pg.Client;
  let expected: { json: string; csv: string }[];
  try {
    const query = <T extends pg.QueryResultRow>(text: string) => client.query<T>({ text, types: WIRE_TIMESTAMPS });
    const { rows } = await query<DriveRow & ReportRow>(
      `SELECT d.*, r.drive_id, r.group_id, r.status, r.reported_at, r.modified_at AS report_modified_at
         FROM drives.drive_reports r JOIN drives.drives d ON d.id = r.drive_id
        WHERE r.organization_id = ${ORGANIZATION} ORDER BY r.drive_id`,
    );
    const { rows: comments } = await query<CommentRow>(
      `SELECT id, drive_id, text, user_email, created_at FROM drives.review_comments ORDER BY id`,
    );
    expected = rows.map((row) => {
      const item = reportedDriveItemOf(
        row,
        comments.filter((c) => c.drive_id === row.id),
      );
      return {
        json: `${JSON.stringify({ ...item.body, driver: { id: item.driverId } })}\n`,
        csv: csvLine(csvFields(item.body, item.driverId)),
      };
    });
  } finally {
    await database.db.knex.client.releaseConnection(client);
  }

  const store = new LocalArchiveStore(root);
  const exportId = '00000000-0000-4000-8000-0000000000e3';
  await writeDrivesExportPart(database.db.knex, store, ORGANIZATION, exportId);
  const jsonl = await partText(store, exportId, 'reported_drives.jsonl');
  const csv = await partText(store, exportId, 'reported_drives.csv');
  assert.equal(jsonl, expected.map((e) => e.json).join(''));
  assert.equal(csv, csvLine(EXPORT_CSV_COLUMNS) + expected.map((e) => e.csv).join(''));
});
