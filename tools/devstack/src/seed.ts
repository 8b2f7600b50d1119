import type { groupsV1, usersV1 } from '@mileage/proto';
import type { PromiseClient } from '@mileage/runtime';
import pg from 'pg';
import { DEMO_GROUPS, DEMO_USERS, demoUserName } from './demo-data';

export interface SeedTargets {
  /** Superuser (or read-everything) URL used only to see whether the database is empty. */
  adminUrl: string;
  users: PromiseClient<usersV1.UsersServiceClient>;
  groups: PromiseClient<groupsV1.GroupsServiceClient>;
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
        name: { givenName: demo.givenName, familyName: demo.familyName, formatted: `${demo.givenName} ${demo.familyName}` },
        emails: [{ value: userName, type: 'work', primary: true }],
        active: true,
        displayName: `${demo.givenName} ${demo.familyName}`,
        timezone: demo.timezone,
        version: 0,
      },
    });
  }
  // On an empty database the groups get ids 1 and 2, as CONTRACT §6 names them.
  for (const group of DEMO_GROUPS) await targets.groups.createGroup(group);
  return true;
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
