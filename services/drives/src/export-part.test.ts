// The Drives service's part of an organization export against real PostgreSQL and a store on disk: both files from
// one pass over the organization's reported drives, in pages, the other organization's drives in neither.
import { createMigratedDatabase } from '@mileage/runtime/testing';
import { LocalArchiveStore } from '@mileage/runtime/storage';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { text } from 'node:stream/consumers';
import { after, before, test } from 'node:test';
import { openDatabase } from './database';
import { writeDrivesExportPart } from './export-part';

const EXPORT_ID = '00000000-0000-4000-8000-0000000000e1';
/** More than two pages of 1,000, so that the pages' seams are crossed. */
const DRIVES = 2_345;
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
        `INSERT INTO review_comments (drive_id, text, user_email)
         SELECT drive_id, n || ': looks right, "mostly"', 'admin@example.com' FROM drive_reports,
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
  const files = await writeDrivesExportPart(database.db.knex, store, 1, EXPORT_ID);
  assert.deepEqual(
    files.map((f) => [f.name, f.rows]),
    [
      ['reported_drives.jsonl', DRIVES],
      ['reported_drives.csv', DRIVES],
    ],
  );
  const jsonl = await text(await store.get(`exports/${EXPORT_ID}/parts/reported_drives.jsonl`));
  const lines = jsonl
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as ExportedLine);
  assert.equal(Buffer.byteLength(jsonl), files[0]!.sizeBytes);
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
  const commented = lines.find((l) => Number(l.id) % 10 === 0)!;
  assert.deepEqual(
    commented.review_comments.map((c) => c.text),
    ['1: looks right, "mostly"', '2: looks right, "mostly"'],
  );

  const csv = await text(await store.get(`exports/${EXPORT_ID}/parts/reported_drives.csv`));
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
