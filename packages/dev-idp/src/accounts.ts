import { createHash, timingSafeEqual } from 'node:crypto';

export interface DevAccount {
  username: string;
  password: string;
  /** Platform user id, the `user_id` claim. */
  userId: string;
  givenName?: string;
  familyName?: string;
  email?: string;
}

/** The demo users of CONTRACT §6 and §7 who sign in (development only): Demo Org's four, Globex's Erin and Frank. */
export const DEMO_ACCOUNTS: DevAccount[] = [
  { username: 'alice@example.com', password: 'demo', userId: 'AliceAdm01', givenName: 'Alice', familyName: 'Admin' },
  { username: 'bob@example.com', password: 'demo', userId: 'BobDriver1', givenName: 'Bob', familyName: 'Driver' },
  { username: 'carol@example.com', password: 'demo', userId: 'CarolDrv01', givenName: 'Carol', familyName: 'Driver' },
  { username: 'dave@example.com', password: 'demo', userId: 'DaveSolo01', givenName: 'Dave', familyName: 'Solo' },
  { username: 'erin@globex.example', password: 'demo', userId: 'ErinAdmin1', givenName: 'Erin', familyName: 'Admin' },
  {
    username: 'frank@globex.example',
    password: 'demo',
    userId: 'FrankDrv01',
    givenName: 'Frank',
    familyName: 'Driver',
  },
];

const digest = (value: string) => createHash('sha256').update(value).digest();

export class AccountDirectory {
  private readonly byUsername = new Map<string, DevAccount>();
  private readonly byUserId = new Map<string, DevAccount>();

  constructor(accounts: DevAccount[]) {
    for (const account of accounts) {
      this.byUsername.set(account.username.toLowerCase(), account);
      this.byUserId.set(account.userId, account);
    }
  }

  /** The account when username (case-insensitive) and password match; compared in constant time. */
  authenticate(username: string, password: string): DevAccount | undefined {
    const account = this.byUsername.get(username.toLowerCase());
    const ok = timingSafeEqual(digest(password), digest(account?.password ?? '\u0000no-account'));
    return account && ok ? account : undefined;
  }

  byId(userId: string): DevAccount | undefined {
    return this.byUserId.get(userId);
  }
}
