// The operator's offboarding commands against the four owners' real gRPC servers over one real PostgreSQL database:
// offboard with a grace period, the status, --cancel, --now with its receipt, and an unknown organization.
import { createServer as drivesServer, openDatabase as openDrives } from '@mileage/drives';
import { createServer as groupsServer, openDatabase as openGroups } from '@mileage/groups';
import { drivesV1, groupsV1, PROTO_FILES, usersV1, webhooksV1 } from '@mileage/proto';
import { createGrpcClient, type PromiseClient } from '@mileage/runtime/grpc';
import { acknowledgementsChannel, SCIM_TOKEN_REVOCATIONS_CHANNEL } from '@mileage/runtime/formats';
import {
  createTestDatabase,
  startTestService,
  testRedisUrl,
  type TestDatabase,
  type TestService,
} from '@mileage/runtime/testing';
import { Redis } from 'ioredis';
import { createHash } from 'node:crypto';
import { createServer as usersServer, openDatabase as openUsers } from '@mileage/users';
import {
  createServer as webhooksServer,
  openDatabase as openWebhooks,
  SecretBox,
  WebhooksRepository,
} from '@mileage/webhooks';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { seedOrganization } from './erasure-fixture';
import { type OffboardingClients } from './offboarding';
import { announceOnRedis, organizationIdOf, runOffboardingCommand } from './org';

let testDb: TestDatabase;
let client: pg.Client;
const closers: (() => Promise<void>)[] = [];
let clients: OffboardingClients;
let usersClient: PromiseClient<usersV1.UsersServiceClient>;

before(async () => {
  testDb = await createTestDatabase('offboarding');
  const open = <D extends { migrate(): Promise<unknown>; close(): Promise<void> }>(opener: (o: { url: string }) => D) =>
    opener({ url: testDb.url });
  const [users, groups, drives, webhooks] = [open(openUsers), open(openGroups), open(openDrives), open(openWebhooks)];
  for (const db of [users, groups, drives, webhooks]) {
    await db.migrate();
    closers.push(() => db.close());
  }
  const started: TestService<unknown>[] = [];
  const usersService = await startTestService({
    service: 'users',
    implementation: usersServer({ knex: users.knex }),
    protoFile: PROTO_FILES.users,
    Client: usersV1.OrganizationsServiceClient,
    deadlineMs: 10_000,
  });
  const groupsService = await startTestService({
    service: 'groups',
    implementation: groupsServer({ knex: groups.knex }),
    protoFile: PROTO_FILES.groups,
    Client: groupsV1.GroupsServiceClient,
    deadlineMs: 10_000,
  });
  const drivesService = await startTestService({
    service: 'drives',
    implementation: drivesServer({ knex: drives.knex, groups: groupsService.client }),
    protoFile: PROTO_FILES.drives,
    Client: drivesV1.DrivesServiceClient,
    deadlineMs: 10_000,
  });
  const webhooksService = await startTestService({
    service: 'webhooks',
    implementation: webhooksServer({
      repo: new WebhooksRepository(webhooks.knex),
      secrets: new SecretBox(undefined),
      policy: { mode: 'development', allow: new Set(), ports: [] },
      resolver: async () => [],
      groups: groupsService.client,
    }),
    protoFile: PROTO_FILES.webhooks,
    Client: webhooksV1.WebhooksServiceClient,
    deadlineMs: 10_000,
  });
  started.push(usersService, groupsService, drivesService, webhooksService);
  closers.unshift(...started.map((s) => () => s.close()));
  clients = {
    organizations: usersService.client,
    webhooks: webhooksService.client,
    owners: { groups: groupsService.client, drives: drivesService.client, webhooks: webhooksService.client },
  };
  usersClient = createGrpcClient(usersV1.UsersServiceClient, usersService.address, { defaultDeadlineMs: 10_000 });
  closers.unshift(async () => usersClient.close());
  client = new pg.Client({ connectionString: testDb.url });
  await client.connect();
  redis = new Redis(testRedisUrl());
});

/** What the gateway learns of a caller of organization 31 (its account) and of one of its SCIM secret tokens. */
async function credentialsOf31(): Promise<{ suspended: boolean | undefined; tokenOrganization: number | undefined }> {
  const { users: accounts } = await usersClient.batchGetUsers({
    ids: ['U031000001'],
    view: usersV1.UserView.USER_VIEW_ACCOUNT,
  });
  const secretSha256 = createHash('sha256').update('secret31-1').digest();
  const token = await clients.organizations.resolveScimToken({ secretSha256 }).catch(() => undefined);
  return { suspended: accounts[0]!.organizationSuspended, tokenOrganization: token?.token?.organizationId };
}

after(async () => {
  redis.disconnect();
  await client.end();
  for (const close of closers) await close();
  await testDb.drop();
});

let redis: Redis;

async function pausedOrganizations(): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    'SELECT organization_id AS id FROM webhooks.paused_organizations ORDER BY 1',
  );
  return rows.map((row) => row.id);
}

async function run(...args: Parameters<typeof runOffboardingCommand>[0][]): Promise<string> {
  const lines: string[] = [];
  for (const command of args)
    await runOffboardingCommand(
      command,
      clients,
      (line) => lines.push(line),
      async (ids) => {
        assert.deepEqual(await announceOnRedis(redis, ids), [], 'every replica acknowledged');
      },
    );
  return lines.join('\n');
}

test('offboard with a grace period, the status, then --cancel: everything as before', async () => {
  await seedOrganization(client, 31, 2);
  // The seed fills every table, the pause included: a live organization has none.
  await client.query('DELETE FROM webhooks.paused_organizations WHERE organization_id = 31');
  assert.deepEqual(await credentialsOf31(), { suspended: false, tokenOrganization: 31 });
  assert.deepEqual(await pausedOrganizations(), []);
  // The gateways hear the organization's tokens revoked on their channel, as on a revocation (their caches drop them),
  // and the command ends once each replica acknowledged it has: this listener acknowledges as a replica does.
  const listener = new Redis(testRedisUrl());
  const acknowledger = new Redis(testRedisUrl());
  await listener.subscribe(SCIM_TOKEN_REVOCATIONS_CHANNEL);
  const announced: string[] = [];
  listener.on('message', (_channel: string, id: string) => {
    announced.push(id);
    void acknowledger.publish(acknowledgementsChannel(SCIM_TOKEN_REVOCATIONS_CHANNEL), id);
  });
  const printed = await run({ command: 'offboard', organization: 'org-31', graceDays: 7, now: false });
  const { rows: tokens } = await client.query<{ id: string }>(
    `SELECT id FROM users.scim_tokens WHERE organization_id = 31 ORDER BY id`,
  );
  listener.disconnect();
  acknowledger.disconnect();
  assert.deepEqual(
    announced.sort(),
    [...tokens.map((row) => row.id), 'organization:31'].sort(),
    'every message acted on before the command ended',
  );
  assert.match(printed, /organization 31: suspended \(grace period\)/);
  assert.match(await run({ command: 'offboarding', organization: '31' }), /suspended/);
  await assert.rejects(
    run({ command: 'offboard', organization: 'org-31', now: false }),
    /already being offboarded/,
    'a second offboarding is refused',
  );
  await assert.rejects(clients.organizations.startErasure({ organizationId: 31 }), /grace period/);
  // Suspended: the caller's account read says so (the gateway answers 401), its SCIM token resolves to nothing (401).
  assert.deepEqual(await credentialsOf31(), { suspended: true, tokenOrganization: undefined });
  assert.deepEqual(await pausedOrganizations(), ['31'], 'the Webhooks service claims none of its deliveries');
  assert.match(await run({ command: 'cancel', organization: 'org-31' }), /offboarding cancelled/);
  assert.deepEqual(await credentialsOf31(), { suspended: false, tokenOrganization: 31 });
  assert.deepEqual(await pausedOrganizations(), []);
  await assert.rejects(run({ command: 'offboarding', organization: '31' }), /not being offboarded/);
  const { rows } = await client.query(`SELECT count(*)::int AS n FROM users.users WHERE organization_id = 31`);
  assert.deepEqual(rows, [{ n: 2 }]);
});

test('offboard --now erases every owner and prints the receipt, without names or e-mail addresses', async () => {
  await seedOrganization(client, 32, 3);
  await seedOrganization(client, 33, 3);
  const printed = await run({ command: 'offboard', organization: 'org-32', now: true });
  assert.match(printed, /organization 32: erased/);
  assert.match(printed, /drives\.review_comments\s+3/);
  assert.match(printed, /users\.organizations\s+1/);
  assert.doesNotMatch(printed, /@|Organization 32|user1/);
  const { offboarding } = await clients.organizations.getOffboarding({ organizationId: 32 });
  const days = (offboarding!.backupsHoldUntil!.seconds - offboarding!.erasureFinishedAt!.seconds) / 86_400;
  assert.equal(days, 32, 'no backup holds the data 32 days after the erasure (docs/operations.md)');
  assert.equal(offboarding!.erasedRows['users.users'], 3);
  const { rows } = await client.query(
    `SELECT (SELECT count(*) FROM users.users WHERE organization_id = 32)::int AS erased,
            (SELECT count(*) FROM users.users WHERE organization_id = 33)::int AS kept`,
  );
  assert.deepEqual(rows, [{ erased: 0, kept: 3 }]);
  // The receipt stays, asked by the organization's id (its alias is gone with it); --now again changes nothing.
  assert.match(await run({ command: 'offboarding', organization: '32' }), /erased/);
  assert.match(await run({ command: 'offboard', organization: '32', now: true }), /organization 32: erased/);
  await assert.rejects(run({ command: 'offboard', organization: '32', now: false }), /already being offboarded/);
  await assert.rejects(run({ command: 'cancel', organization: '32' }), /can no longer be cancelled/);
  assert.ok(!(await pausedOrganizations()).includes('32'), 'nothing of the erased organization comes back');
});

test('an unknown organization is a clear error', async () => {
  await assert.rejects(organizationIdOf(clients.organizations, 'no-such-org'), /organization "no-such-org" not found/);
  await assert.rejects(run({ command: 'offboard', organization: '999', now: false }), /organization 999 not found/);
  await assert.rejects(run({ command: 'offboarding', organization: '999' }), /not being offboarded/);
});

test('erase-due erases the organizations whose grace period is over', async () => {
  await seedOrganization(client, 34, 1);
  await run({ command: 'offboard', organization: '34', graceDays: 0, now: false });
  assert.match(await run({ command: 'erase-due' }), /organization 34: erased/);
  assert.match(await run({ command: 'erase-due' }), /no organization is due/);
});

test('a gateway replica that does not acknowledge an announcement is named in a warning after the timeout', async () => {
  const silent = new Redis(testRedisUrl());
  await silent.subscribe(SCIM_TOKEN_REVOCATIONS_CHANNEL);
  try {
    const warnings = await announceOnRedis(redis, ['organization:999', 'organization:998'], 100);
    assert.equal(warnings.length, 2, warnings.join('\n'));
    assert.match(warnings[0]!, /^organization:999: \d+ of \d+ gateway replicas acknowledged within 100 ms$/);
  } finally {
    silent.disconnect();
  }
});
