// `npm run bench:paging`: does a page of 100 cost the same at 10,000 drives as at millions? Grows one database
// through the sizes given and, at each, times pages of a group's reported drives and of a user's drives through
// the real Drives service over gRPC (sequential calls, so each number is one page's latency).
import { generateVolume } from '@mileage/devstack';
import { createServer as createDrivesServer, openDatabase as openDrivesDatabase } from '@mileage/drives';
import { createServer as createGroupsServer, openDatabase as openGroupsDatabase } from '@mileage/groups';
import { drivesV1, groupsV1 } from '@mileage/proto';
import { asOrganization } from '@mileage/runtime/testing';
import { openDatabase as openUsersDatabase } from '@mileage/users';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import pg from 'pg';
import { serveInProcess, timeSequential, withBenchPostgres } from './sequential';
import { parseFlags } from './cli';

const values = parseFlags('npm run bench:paging --', {
  sizes: { type: 'string', default: '10000,1000000' },
  calls: { type: 'string', default: '300' },
  /** CI's check that the bench runs: a tiny size and few calls. */
  smoke: { type: 'boolean', default: false },
});
if (values.smoke) Object.assign(values, { sizes: '2000', calls: '20' });
const sizes = values.sizes.split(',').map(Number);
const calls = Number(values.calls);

async function main(): Promise<void> {
  await withBenchPostgres('paging', async (url) => {
    for (const open of [openUsersDatabase, openGroupsDatabase, openDrivesDatabase]) {
      const db = open({ url });
      await db.migrate().finally(() => db.close());
    }
    const db = openDrivesDatabase({ url });
    // Drives asks Groups whether a group is of the drive's organization when a drive is reported.
    const groupsDb = openGroupsDatabase({ url });
    const groups = await serveInProcess(
      'groups',
      createGroupsServer({ knex: groupsDb.knex }),
      groupsV1.GroupsServiceClient,
    );
    const drives = await serveInProcess(
      'drives',
      createDrivesServer({ knex: db.knex, groups: groups.client }),
      drivesV1.DrivesServiceClient,
    );
    // The volume is organization 1's.
    const client = asOrganization(drives.client, 1);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const results: Record<string, unknown>[] = [];
    for (const size of sizes) {
      const started = Date.now();
      // 1,000 users in groups of 100: each group's share of reports grows with the volume.
      const seeded = await generateVolume(admin, {
        users: 1000,
        drives: size - (results.length ? sizes[results.length - 1]! : 0),
      });
      const seedSeconds = (Date.now() - started) / 1000;
      const { rows } = await admin.query<{ total: string; reports: string; group_reports: string }>(
        `SELECT (SELECT count(*) FROM drives.drives) AS total, (SELECT count(*) FROM drives.drive_reports) AS reports,
                (SELECT count(*) FROM drives.drive_reports WHERE group_id = (SELECT min(id) FROM groups.teams)) AS group_reports`,
      );
      const group = Number((await admin.query<{ id: string }>('SELECT min(id) AS id FROM groups.teams')).rows[0]!.id);
      const probe = await client.listReportedDrives({
        groupIds: [group],
        limit: 100,
        sortField: drivesV1.SortField.SORT_FIELD_MODIFIED,
      });
      if (probe.reportedDrives.length === 0) throw new Error(`group ${group} has no reported drives to page through`);
      const firstPage = await timeSequential(calls, () =>
        client.listReportedDrives({ groupIds: [group], limit: 100, sortField: drivesV1.SortField.SORT_FIELD_MODIFIED }),
      );
      const deepStart = (
        await client.listReportedDrives({
          groupIds: [group],
          limit: 1000,
          sortField: drivesV1.SortField.SORT_FIELD_MODIFIED,
        })
      ).nextPosition;
      const laterPage = await timeSequential(calls, () =>
        client.listReportedDrives({
          groupIds: [group],
          limit: 100,
          sortField: drivesV1.SortField.SORT_FIELD_MODIFIED,
          ...(deepStart ? { afterPosition: deepStart } : {}),
        }),
      );
      const userPage = await timeSequential(calls, () =>
        client.listUserDrives({
          userId: 'V000000002',
          limit: 100,
          classification: drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_ALL,
          sortField: drivesV1.SortField.SORT_FIELD_MODIFIED,
        }),
      );
      const row = {
        drives: Number(rows[0]!.total),
        reports: Number(rows[0]!.reports),
        group_reports: Number(rows[0]!.group_reports),
        seed_seconds: seedSeconds,
        seeded_users: seeded.users,
        reported_first_page_ms: firstPage,
        reported_page_after_1000_ms: laterPage,
        user_first_page_ms: userPage,
      };
      results.push(row);
      process.stdout.write(
        `${String(row.drives).padStart(10)} drives (${row.group_reports} reported to the group, seeded in ${seedSeconds.toFixed(1)} s): ` +
          `group page 1 p50 ${firstPage.p50.toFixed(2)} ms p99 ${firstPage.p99.toFixed(2)} ms; ` +
          `page after 1,000 p50 ${laterPage.p50.toFixed(2)} ms; user page p50 ${userPage.p50.toFixed(2)} ms\n`,
      );
    }
    await admin.end();
    await drives.stop();
    await groups.stop();
    await db.close();
    await groupsDb.close();
    if (values.smoke) return; // a smoke run's figures are not results
    const dir = path.join(__dirname, '..', 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'paging.json'),
      JSON.stringify({ date: new Date().toISOString(), node: process.version, calls, results }, null, 2) + '\n',
    );
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`paging bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
