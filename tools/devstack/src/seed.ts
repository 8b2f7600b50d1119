import { drivesV1, type groupsV1, type usersV1 } from '@mileage/proto';
import { demoDrives } from './demo-drives';
import type { PromiseClient } from '@mileage/runtime';
import pg from 'pg';
import { DEMO_GROUPS, DEMO_USERS, demoUserName } from './demo-data';

export interface SeedTargets {
  /** Superuser (or read-everything) URL used only to see whether the database is empty. */
  adminUrl: string;
  users: PromiseClient<usersV1.UsersServiceClient>;
  groups: PromiseClient<groupsV1.GroupsServiceClient>;
  drives: PromiseClient<drivesV1.DrivesServiceClient>;
}

/**
 * The one seeding entry point: when the platform holds no users yet, writes the demo data through the
 * services that own it (never behind their backs). Returns whether anything was seeded.
 */
export async function seedDemoData(targets: SeedTargets): Promise<boolean> {
  if (!(await isEmpty(targets.adminUrl))) return false;
  for (const demo of DEMO_USERS) {
    const userName = demoUserName(demo);
    await targets.users.createUser({
      user: {
        id: demo.id,
        userName,
        name: {
          givenName: demo.givenName,
          familyName: demo.familyName,
          formatted: `${demo.givenName} ${demo.familyName}`,
        },
        emails: [{ value: userName, type: 'work', primary: true }],
        active: true,
        displayName: `${demo.givenName} ${demo.familyName}`,
        timezone: demo.timezone,
        version: 0,
      },
    });
  }
  // On an empty database the groups get ids 1 and 2, as CONTRACT §6 names them.
  const groupIds: number[] = [];
  for (const group of DEMO_GROUPS) groupIds.push((await targets.groups.createGroup(group)).group!.id);
  await seedDemoDrives(targets.drives, groupIds[0]!, groupIds[1]!);
  return true;
}

/**
 * 65 drives per driver over the last 90 days; 28 of Bob's and 12 of Carol's business drives reported to group 1,
 * 6 of Carol's and 8 of Dave's to group 2; some reviewed by the group's admin with comments. Then, for the change feed
 * (`include_deleted=true`), a few deletions and withdrawals through the service: Bob deletes a reported and a personal
 * drive and withdraws a report, Carol withdraws one from group 1 and deletes a personal drive, Dave deletes a reported
 * drive. What stays is above CONTRACT §6's minimums: Bob 63 drives, 26 reported; Carol 64, 11 to group 1; Dave 64.
 */
async function seedDemoDrives(
  drives: PromiseClient<drivesV1.DrivesServiceClient>,
  group1: number,
  group2: number,
): Promise<void> {
  const now = new Date();
  const plan = [
    {
      driver: { userId: 'BobDriver1', region: 'US' as const, count: 65 },
      seed: 11,
      reports: [{ group: group1, count: 28, reviewer: 'alice@example.com' }],
      deleteReported: 1,
      deletePersonal: 1,
      withdraw: 1,
    },
    {
      driver: { userId: 'CarolDrv01', region: 'CA' as const, count: 65 },
      seed: 22,
      reports: [
        { group: group1, count: 12, reviewer: 'alice@example.com' },
        { group: group2, count: 6, reviewer: 'dave@example.com' },
      ],
      deleteReported: 0,
      deletePersonal: 1,
      withdraw: 1,
    },
    {
      driver: { userId: 'DaveSolo01', region: 'GB' as const, count: 65 },
      seed: 33,
      reports: [{ group: group2, count: 8, reviewer: 'dave@example.com' }],
      deleteReported: 1,
      deletePersonal: 0,
      withdraw: 0,
    },
  ];
  for (const { driver, seed, reports, deleteReported, deletePersonal, withdraw } of plan) {
    const created: drivesV1.Drive[] = [];
    for (const drive of demoDrives(driver, now, seed)) created.push((await drives.createDrive({ drive })).drive!);
    // Report the business drives that have a value, newest first, to each group in turn.
    const reportable = created
      .filter((d) => d.classification === drivesV1.Classification.CLASSIFICATION_BUSINESS)
      .reverse();
    let next = 0;
    for (const report of reports) {
      for (let i = 0; i < report.count && next < reportable.length; i++, next++) {
        const drive = reportable[next]!;
        await drives.reportDrive({ driveId: drive.id, groupId: report.group });
        if (i % 3 === 1) {
          await drives.reviewReportedDrive({
            driveId: drive.id,
            status: 'approved',
            comment: 'Approved, thanks.',
            reviewerEmail: report.reviewer,
          });
        } else if (i % 7 === 5) {
          await drives.reviewReportedDrive({
            driveId: drive.id,
            status: 'rejected',
            comment: 'Please add the client name to the purpose.',
            reviewerEmail: report.reviewer,
          });
        }
      }
    }
    // The oldest reports of the first group are the ones withdrawn or deleted, so the newest pages stay as they were.
    const reported = reportable.slice(0, reports[0]!.count).reverse();
    const userId = driver.userId;
    for (const drive of reported.slice(0, deleteReported)) await drives.deleteDrive({ driveId: drive.id, userId });
    for (const drive of reported.slice(deleteReported, deleteReported + withdraw))
      await drives.withdrawReport({ driveId: drive.id, userId });
    const personal = created.filter((d) => d.classification === drivesV1.Classification.CLASSIFICATION_PERSONAL);
    for (const drive of personal.slice(0, deletePersonal)) await drives.deleteDrive({ driveId: drive.id, userId });
  }
}

async function isEmpty(adminUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM users.users) AS any');
    return !rows[0]?.any;
  } finally {
    await client.end();
  }
}
