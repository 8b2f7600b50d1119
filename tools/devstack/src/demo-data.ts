/** The demo data of CONTRACT §6: seeded into an empty database by `npm start`. */
export const DEMO_PASSWORD = 'demo';

export interface DemoUser {
  id: string;
  givenName: string;
  familyName: string;
  timezone: string;
}

export const DEMO_USERS: DemoUser[] = [
  { id: 'AliceAdm01', givenName: 'Alice', familyName: 'Admin', timezone: 'America/New_York' },
  { id: 'BobDriver1', givenName: 'Bob', familyName: 'Driver', timezone: 'America/Chicago' },
  { id: 'CarolDrv01', givenName: 'Carol', familyName: 'Driver', timezone: 'America/Toronto' },
  { id: 'DaveSolo01', givenName: 'Dave', familyName: 'Solo', timezone: 'Europe/London' },
];

export function demoUserName(user: DemoUser): string {
  return `${user.givenName.toLowerCase()}@example.com`;
}

/** Group 1 "Demo Team": Alice admin, Bob and Carol drivers. Group 2 "Second Team": Carol driver, Dave admin and driver. */
export const DEMO_GROUPS = [
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
];
