/** The demo data of CONTRACT §6 and §7: seeded into an empty database by `npm start`. */
import type { DemoDriver } from './demo-drives';

export const DEMO_PASSWORD = 'demo';

export interface DemoUser {
  id: string;
  userName: string;
  givenName: string;
  familyName: string;
  timezone: string;
  /** Has a sign-in account at the identity provider (password `demo`); false: provisioned only. */
  signsIn: boolean;
}

export interface DemoGroup {
  displayName: string;
  members: { userId: string; isAdmin: boolean; isDriver: boolean }[];
}

/**
 * One driver's demo drives: `count` over the last 90 days; the newest business drives reported to the organization's
 * groups in turn (`group`: an index into its groups), some reviewed by `reviewer`; then, for the change feed
 * (`include_deleted=true`), deletions and withdrawals through the service: the oldest reports of the first group are
 * the ones deleted or withdrawn (so the newest pages stay as they were), and the oldest personal drives are deleted.
 */
export interface DemoDrivePlan {
  driver: DemoDriver;
  seed: number;
  reports: { group: number; count: number; reviewer: string }[];
  deleteReported: number;
  deletePersonal: number;
  withdraw: number;
}

export interface DemoOrganization {
  alias: string;
  name: string;
  /** Made by the Users service's migration (organization 1, the default organization of an upgraded installation). */
  madeByMigration: boolean;
  users: DemoUser[];
  /** The users who administer the organization (its SCIM tokens, its provisioning trail). */
  organizationAdmins: string[];
  /** Created in this order: on an empty database Demo Org's get ids 1 and 2, Globex's 3. */
  groups: DemoGroup[];
  drives: DemoDrivePlan[];
}

const user = (
  id: string,
  givenName: string,
  familyName: string,
  timezone: string,
  userName: string,
  signsIn = true,
) => ({
  id,
  userName,
  givenName,
  familyName,
  timezone,
  signsIn,
});

/**
 * Demo Org: 65 drives per driver; 28 of Bob's and 12 of Carol's business drives reported to group 1, 6 of Carol's and 8
 * of Dave's to group 2. Bob deletes a reported and a personal drive and withdraws a report, Carol withdraws one from
 * group 1 and deletes a personal drive, Dave deletes a reported drive. What stays is above CONTRACT §6's minimums: Bob
 * 63 drives, 26 reported; Carol 64, 11 to group 1; Dave 64. Globex: Frank's 65 drives, 15 reported to group 3.
 */
export const DEMO_ORGANIZATIONS: DemoOrganization[] = [
  {
    alias: 'demo',
    name: 'Demo Org',
    madeByMigration: true,
    users: [
      user('AliceAdm01', 'Alice', 'Admin', 'America/New_York', 'alice@example.com'),
      user('BobDriver1', 'Bob', 'Driver', 'America/Chicago', 'bob@example.com'),
      user('CarolDrv01', 'Carol', 'Driver', 'America/Toronto', 'carol@example.com'),
      user('DaveSolo01', 'Dave', 'Solo', 'Europe/London', 'dave@example.com'),
    ],
    organizationAdmins: ['AliceAdm01'],
    groups: [
      {
        displayName: 'Demo Team',
        members: [
          { userId: 'AliceAdm01', isAdmin: true, isDriver: false },
          { userId: 'BobDriver1', isAdmin: false, isDriver: true },
          { userId: 'CarolDrv01', isAdmin: false, isDriver: true },
        ],
      },
      {
        displayName: 'Second Team',
        members: [
          { userId: 'CarolDrv01', isAdmin: false, isDriver: true },
          { userId: 'DaveSolo01', isAdmin: true, isDriver: true },
        ],
      },
    ],
    drives: [
      {
        driver: { userId: 'BobDriver1', region: 'US', count: 65 },
        seed: 11,
        reports: [{ group: 0, count: 28, reviewer: 'alice@example.com' }],
        deleteReported: 1,
        deletePersonal: 1,
        withdraw: 1,
      },
      {
        driver: { userId: 'CarolDrv01', region: 'CA', count: 65 },
        seed: 22,
        reports: [
          { group: 0, count: 12, reviewer: 'alice@example.com' },
          { group: 1, count: 6, reviewer: 'dave@example.com' },
        ],
        deleteReported: 0,
        deletePersonal: 1,
        withdraw: 1,
      },
      {
        driver: { userId: 'DaveSolo01', region: 'GB', count: 65 },
        seed: 33,
        reports: [{ group: 1, count: 8, reviewer: 'dave@example.com' }],
        deleteReported: 1,
        deletePersonal: 0,
        withdraw: 0,
      },
    ],
  },
  {
    alias: 'globex',
    name: 'Globex',
    madeByMigration: false,
    users: [
      user('ErinAdmin1', 'Erin', 'Admin', 'America/Los_Angeles', 'erin@globex.example'),
      user('FrankDrv01', 'Frank', 'Driver', 'America/Denver', 'frank@globex.example'),
      // The same userName as Demo Org's Bob: userName is unique per organization only.
      user('GlobexBob1', 'Bob', 'Globex', 'America/Chicago', 'bob@example.com', false),
    ],
    organizationAdmins: ['ErinAdmin1'],
    groups: [
      {
        displayName: 'Globex Fleet',
        members: [
          { userId: 'ErinAdmin1', isAdmin: true, isDriver: true },
          { userId: 'FrankDrv01', isAdmin: false, isDriver: true },
        ],
      },
    ],
    drives: [
      {
        driver: { userId: 'FrankDrv01', region: 'US', count: 65 },
        seed: 44,
        reports: [{ group: 0, count: 15, reviewer: 'erin@globex.example' }],
        deleteReported: 0,
        deletePersonal: 0,
        withdraw: 0,
      },
    ],
  },
];

/** The provisioning clients of the demo organizations (development secrets; CONTRACT §6, §7). */
export const DEMO_SCIM_CLIENTS = {
  demo: { clientId: 'mileage-scim', secret: 'scim-dev-secret' },
  globex: { clientId: 'mileage-scim-globex', secret: 'scim-globex-dev-secret' },
} as const;

/**
 * How the stack binds `mileage-scim`, which carries no organization claim, to Demo Org (SCIM_CLIENT_ORGANIZATIONS):
 * exactly how an upgraded installation keeps its one client working. `mileage-scim-globex` names Globex by its claim.
 */
export const DEMO_CLIENT_ORGANIZATIONS = `${DEMO_SCIM_CLIENTS.demo.clientId}=demo`;
