import { drivesV1, type groupsV1, type usersV1 } from '@mileage/proto';
import { ALL_ORGANIZATIONS_SETTING } from '@mileage/runtime/database';
import { type CallSettings, type PromiseClient } from '@mileage/runtime/grpc';
import pg from 'pg';
import { DEMO_ORGANIZATIONS, type DemoDrivePlan, type DemoOrganization } from './demo-data';
import { demoDrives } from './demo-drives';

export interface SeedTargets {
  /** Superuser (or read-everything) URL used only to see whether the database is empty. */
  adminUrl: string;
  users: PromiseClient<usersV1.UsersServiceClient>;
  organizations: PromiseClient<usersV1.OrganizationsServiceClient>;
  groups: PromiseClient<groupsV1.GroupsServiceClient>;
  drives: PromiseClient<drivesV1.DrivesServiceClient>;
}

/**
 * The one seeding entry point: when the platform holds no users yet, writes the demo data through the
 * services that own it (never behind their backs), each organization's with that organization as every call's
 * context. Returns whether anything was seeded.
 */
export async function seedDemoData(targets: SeedTargets): Promise<boolean> {
  if (!(await isEmpty(targets.adminUrl))) return false;
  for (const organization of DEMO_ORGANIZATIONS) {
    const call: CallSettings = { organizationId: await organizationId(targets.organizations, organization) };
    for (const demo of organization.users) {
      await targets.users.createUser(
        {
          user: {
            id: demo.id,
            userName: demo.userName,
            name: {
              givenName: demo.givenName,
              familyName: demo.familyName,
              formatted: `${demo.givenName} ${demo.familyName}`,
            },
            emails: [{ value: demo.userName, type: 'work', primary: true }],
            active: true,
            displayName: `${demo.givenName} ${demo.familyName}`,
            timezone: demo.timezone,
            version: 0,
            // Both set by the service: the organization from the call, the role only by SetOrganizationAdmin.
            organizationId: 0,
            organizationAdmin: false,
          },
        },
        call,
      );
    }
    for (const userId of organization.organizationAdmins)
      await targets.organizations.setOrganizationAdmin({ userId, organizationAdmin: true }, call);
    const groupIds: number[] = [];
    for (const group of organization.groups) groupIds.push((await targets.groups.createGroup(group, call)).group!.id);
    for (const plan of organization.drives) await seedDemoDrives(targets.drives, plan, groupIds, call);
  }
  return true;
}

/** Demo Org is the Users migration's organization 1 (found by its alias); the others are created here. */
async function organizationId(
  organizations: SeedTargets['organizations'],
  organization: DemoOrganization,
): Promise<number> {
  const { alias, name } = organization;
  const found = organization.madeByMigration
    ? (await organizations.getOrganization({ key: { $case: 'alias', value: alias } })).organization
    : (await organizations.createOrganization({ alias, name })).organization;
  return found!.id;
}

/** One driver's drives, reports, reviews, deletions and withdrawals (DemoDrivePlan), inside its organization. */
async function seedDemoDrives(
  drives: PromiseClient<drivesV1.DrivesServiceClient>,
  plan: DemoDrivePlan,
  groupIds: number[],
  call: CallSettings,
): Promise<void> {
  const { driver, seed, reports, deleteReported, deletePersonal, withdraw } = plan;
  const created: drivesV1.Drive[] = [];
  for (const drive of demoDrives(driver, new Date(), seed))
    created.push((await drives.createDrive({ drive }, call)).drive!);
  // Report the business drives that have a value, newest first, to each group in turn.
  const reportable = created
    .filter((d) => d.classification === drivesV1.Classification.CLASSIFICATION_BUSINESS)
    .reverse();
  let next = 0;
  for (const report of reports) {
    for (let i = 0; i < report.count && next < reportable.length; i++, next++) {
      const drive = reportable[next]!;
      await drives.reportDrive({ driveId: drive.id, groupId: groupIds[report.group]! }, call);
      const review =
        i % 3 === 1
          ? { status: 'approved', comment: 'Approved, thanks.' }
          : i % 7 === 5
            ? { status: 'rejected', comment: 'Please add the client name to the purpose.' }
            : undefined;
      if (review)
        await drives.reviewReportedDrive({ driveId: drive.id, ...review, reviewerEmail: report.reviewer }, call);
    }
  }
  const reported = reportable.slice(0, reports[0]!.count).reverse();
  const userId = driver.userId;
  for (const drive of reported.slice(0, deleteReported)) await drives.deleteDrive({ driveId: drive.id, userId }, call);
  for (const drive of reported.slice(deleteReported, deleteReported + withdraw))
    await drives.withdrawReport({ driveId: drive.id, userId }, call);
  const personal = created.filter((d) => d.classification === drivesV1.Classification.CLASSIFICATION_PERSONAL);
  for (const drive of personal.slice(0, deletePersonal)) await drives.deleteDrive({ driveId: drive.id, userId }, call);
}

async function isEmpty(adminUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    // Across organizations (row-level security shows a role that is no superuser, e.g. the owner of an external
    // DATABASE_URL, nothing otherwise): the seeding's one look at every organization, as acrossOrganizations does.
    await client.query('BEGIN READ ONLY');
    await client.query('SELECT set_config($1, $2, true)', [ALL_ORGANIZATIONS_SETTING, 'on']);
    const { rows } = await client.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM users.users) AS any');
    await client.query('COMMIT');
    return !rows[0]?.any;
  } finally {
    await client.end();
  }
}
