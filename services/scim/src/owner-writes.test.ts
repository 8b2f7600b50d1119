// Every SCIM write is one transaction of the resource's owner (Users, Groups) carrying its audit entry, serialised
// by the resource's version. Against the real Users and Groups services over gRPC and real PostgreSQL: a crash
// between the owner's commit and the answer, a lost answer followed by the client's retry, and racing changes.
import { status, type ServiceError } from '@grpc/grpc-js';
import { createServer as createGroupsServer, openDatabase as openGroupsDatabase } from '@mileage/groups';
import { groupsV1, PROTO_FILES, scimV1, usersV1 } from '@mileage/proto';
import {
  ACTOR_NOT_ATTESTED,
  ATTESTATION_REPLAYED,
  attestActor,
  createGrpcClient,
  decodeServiceError,
  startGrpcServer,
  type GrpcServerHandle,
  type PromiseClient,
} from '@mileage/runtime/grpc';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import { asOrganization, createTestDatabase, startTestService, type TestDatabase } from '@mileage/runtime/testing';
import { createServer as createUsersServer, openDatabase as openUsersDatabase } from '@mileage/users';
import assert from 'node:assert/strict';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createServer } from './server';

const logger = createLogger({ service: 'scim-test', level: 'silent' });
const ATTESTATION_SECRET = 'owner-writes-test-attestation-secret-0123456789';
let testDb: TestDatabase;
let usersDb: ReturnType<typeof openUsersDatabase>;
let groupsDb: ReturnType<typeof openGroupsDatabase>;
/** The Users and Groups services the SCIM services under test write through. */
const owners: { close(): Promise<void> }[] = [];
const servers: GrpcServerHandle[] = [];
const closers: { close(): void }[] = [];
let usersAddress: string;
let groupsAddress: string;
/** A Groups service of the release before PatchGroup: the same database, no such method (UNIMPLEMENTED). */
let olderGroupsAddress: string;
let users: PromiseClient<usersV1.UsersServiceClient>;
let groups: PromiseClient<groupsV1.GroupsServiceClient>;

/** Lets the owner apply a write, then fails as a crash or a lost answer would: the caller never hears back. */
function afterOwnerWrite<T extends object>(client: T, methods: string[], failure: () => Error): T {
  return new Proxy(client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof property !== 'string' || !methods.includes(property) || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        throw failure();
      };
    },
  });
}

/** A SCIM service over gRPC; `faults` wraps its Users client. */
async function scimService(
  faults?: (client: PromiseClient<usersV1.UsersServiceClient>) => typeof client,
  options: {
    /** Another Groups service (e.g. one of the release before). */
    groupsAddress?: string;
    groupsFaults?: (client: PromiseClient<groupsV1.GroupsServiceClient>) => typeof client;
  } = {},
) {
  const metrics = new Metrics('scim');
  const usersClient = createGrpcClient(usersV1.UsersServiceClient, usersAddress, { defaultDeadlineMs: 2_000 });
  const groupsClient = createGrpcClient(groupsV1.GroupsServiceClient, options.groupsAddress ?? groupsAddress, {
    defaultDeadlineMs: 2_000,
  });
  closers.push(usersClient, groupsClient);
  const server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [
      createServer({
        users: faults ? faults(usersClient) : usersClient,
        groups: options.groupsFaults ? options.groupsFaults(groupsClient) : groupsClient,
        logger,
        baseUrl: 'https://mileage.test/scim/v2',
        metrics,
        attestation: {
          secrets: [ATTESTATION_SECRET],
          maxAgeSeconds: 60,
          replayCacheEntries: 1_000,
        },
      }),
    ],
    protoFiles: [PROTO_FILES.scim],
    logger,
    metrics,
  });
  servers.push(server);
  const client = createGrpcClient(scimV1.ScimServiceClient, `127.0.0.1:${server.port}`, { defaultDeadlineMs: 10_000 });
  closers.push(client);
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const request = {
      method,
      path: path.split('?')[0]!,
      query: path.includes('?') ? path.slice(path.indexOf('?') + 1) : '',
      headers: { 'content-type': 'application/scim+json', ...headers },
      body: body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body)),
      clientId: 'test-idp',
      organizationId: 1,
    };
    const requestId = randomUUID();
    const actorAttestation = attestActor(ATTESTATION_SECRET, { ...request, actor: request.clientId, requestId });
    return client.handleRequest({ ...request, actorAttestation }, { requestId }).then((r) => ({
      status: r.status,
      headers: r.headers,
      body: r.body.length ? JSON.parse(Buffer.from(r.body).toString()) : undefined,
    }));
  };
  return { call, client, metrics };
}

const userAudit = async (id: string) =>
  (await usersDb.knex('provisioning_audit').where({ user_id: id }).orderBy('id')) as {
    operation: string;
    version: string;
    actor: string;
    after: Record<string, unknown> | null;
  }[];

const patchOp = (...operations: unknown[]) => ({
  schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
  Operations: operations,
});

before(async () => {
  testDb = await createTestDatabase('scim');
  usersDb = openUsersDatabase({ url: testDb.url });
  groupsDb = openGroupsDatabase({ url: testDb.url });
  for (const db of [usersDb, groupsDb]) await db.migrate();
  const u = await startTestService({
    service: 'users',
    implementation: createUsersServer({ knex: usersDb.knex }),
    protoFile: PROTO_FILES.users,
    Client: usersV1.UsersServiceClient,
    deadlineMs: 5_000,
  });
  const g = await startTestService({
    service: 'groups',
    implementation: createGroupsServer({ knex: groupsDb.knex }),
    protoFile: PROTO_FILES.groups,
    Client: groupsV1.GroupsServiceClient,
    deadlineMs: 5_000,
  });
  const current = createGroupsServer({ knex: groupsDb.knex });
  const { patchGroup: _, ...olderDefinition } = current.definition;
  const { patchGroup: __, ...olderHandlers } = current.handlers;
  const older = await startTestService({
    service: 'groups',
    implementation: { definition: olderDefinition, handlers: olderHandlers } as typeof current,
    protoFile: PROTO_FILES.groups,
    Client: groupsV1.GroupsServiceClient,
    deadlineMs: 5_000,
  });
  olderGroupsAddress = older.address;
  owners.push(u, g, older);
  // The tests' own reads and writes act for the organization the SCIM requests act for (1).
  ({ address: usersAddress } = u);
  ({ address: groupsAddress } = g);
  users = asOrganization(u.client, 1);
  groups = asOrganization(g.client, 1);
});

after(async () => {
  for (const c of closers) c.close();
  for (const s of servers.reverse()) await s.shutdown(1_000);
  for (const owner of owners.reverse()) await owner.close();
  for (const db of [groupsDb, usersDb]) await db.close();
  await testDb.drop();
});

describe('one owner transaction per SCIM write: the change, every attribute and its audit entry, or none', () => {
  test('a crash right after the Users service committed a create or a PATCH loses neither the attributes nor the audit entry', async () => {
    const crashing = await scimService((c) =>
      afterOwnerWrite(c, ['createUser', 'updateUser'], () => new Error('simulated crash')),
    );
    await assert.rejects(
      crashing.call('POST', '/Users', { userName: 'crash@example.com', title: 'Night shift' }),
      (err: { code?: number }) => err.code === status.INTERNAL,
    );
    const healthy = await scimService();
    const found = await healthy.call('GET', `/Users?filter=${encodeURIComponent('userName eq "crash@example.com"')}`);
    assert.equal(found.body.totalResults, 1, 'the owner applied the write');
    const id = found.body.Resources[0].id as string;
    assert.equal(found.body.Resources[0].title, 'Night shift', 'with every attribute');
    assert.deepEqual(
      (await userAudit(id)).map((a) => [a.operation, Number(a.version), a.actor]),
      [['create', 1, 'test-idp']],
      'and its audit entry, written in the same transaction',
    );

    await assert.rejects(
      crashing.call('PATCH', `/Users/${id}`, patchOp({ op: 'replace', path: 'title', value: 'Day shift' })),
      (err: { code?: number }) => err.code === status.INTERNAL,
    );
    const read = await healthy.call('GET', `/Users/${id}`);
    assert.equal(read.body.meta.version, 'W/"2"');
    assert.equal(read.body.title, 'Day shift', 'a reader sees the version and the attributes that go with it');
    const audit = await userAudit(id);
    assert.deepEqual(
      audit.map((a) => [a.operation, Number(a.version)]),
      [
        ['create', 1],
        ['patch', 2],
      ],
    );
    assert.equal(audit[1]!.after!.title, 'Day shift');
  });

  test('an answer lost after the owner applied a PATCH, then the client retries it: applied once, audited once', async () => {
    const lossy = await scimService((c) =>
      afterOwnerWrite(c, ['updateUser'], () =>
        Object.assign(new Error('deadline exceeded'), { code: status.DEADLINE_EXCEEDED }),
      ),
    );
    const healthy = await scimService();
    const id = (await healthy.call('POST', '/Users', { userName: 'retry@example.com', emails: [] })).body.id as string;
    const add = patchOp({ op: 'add', path: 'phoneNumbers', value: [{ value: '+1 555 0199', type: 'work' }] });
    const lost = await lossy.call('PATCH', `/Users/${id}`, add);
    assert.equal(lost.status, 504, 'the client cannot know whether it applied');
    const retried = await healthy.call('PATCH', `/Users/${id}`, add);
    assert.equal(retried.status, 200);
    assert.deepEqual(retried.body.phoneNumbers, [{ value: '+1 555 0199', type: 'work' }], 'the number is there once');
    assert.equal(retried.body.meta.version, 'W/"2"', 'the retry found nothing to change and wrote nothing');
    assert.deepEqual(
      (await userAudit(id)).map((a) => a.operation),
      ['create', 'patch'],
    );

    // A request that arrives late, computed from a version that has moved since, can no longer apply.
    const stale = (await users.getUser({ id, includeDeleted: false })).user!;
    await healthy.call('PATCH', `/Users/${id}`, patchOp({ op: 'replace', path: 'title', value: 'Now' }));
    const late = await users
      .updateUser({ user: { ...stale, displayName: 'Too late' }, expectedVersion: stale.version })
      .catch((err: unknown) => decodeServiceError(err as never));
    assert.equal((late as { code: number }).code, status.ABORTED);
    assert.equal((await users.getUser({ id, includeDeleted: false })).user!.displayName, undefined);
    assert.equal((await userAudit(id)).length, 3);
  });

  test('racing PATCHes of one user all land (serialised by its version), each audited once, none lost', async () => {
    const scim = await scimService();
    const created = await scim.call('POST', '/Users', { userName: 'busy@example.com', emails: [] });
    const id = created.body.id as string;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        scim.call(
          'PATCH',
          `/Users/${id}`,
          patchOp({ op: 'add', path: 'phoneNumbers', value: [{ value: `+1 555 010${i}`, type: 'work' }] }),
        ),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      Array(8).fill(200),
    );
    const final = await scim.call('GET', `/Users/${id}`);
    assert.deepEqual(
      (final.body.phoneNumbers as { value: string }[]).map((p) => p.value).sort(),
      Array.from({ length: 8 }, (_, i) => `+1 555 010${i}`),
      'every PATCH is in the result',
    );
    const audit = (await userAudit(id)).filter((a) => a.operation === 'patch');
    assert.equal(audit.length, 8, 'one audit entry per applied change');
    assert.deepEqual(
      audit.map((a) => Number(a.version)).sort((a, b) => a - b),
      [2, 3, 4, 5, 6, 7, 8, 9],
    );
    assert.equal(final.body.meta.version, 'W/"9"');
  });

  test('racing PATCHes of one group keep every member change, none lost', async () => {
    const scim = await scimService();
    const { group } = await groups.createGroup({ displayName: 'Racing team', members: [] });
    const members = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        scim.call('POST', '/Users', { userName: `racer${i}@example.com`, emails: [] }).then((r) => r.body.id as string),
      ),
    );
    const results = await Promise.all(
      members.map((value) =>
        scim.call('PATCH', `/Groups/${group!.id}`, patchOp({ op: 'add', path: 'members', value: [{ value }] })),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      Array(6).fill(200),
    );
    const final = await scim.call('GET', `/Groups/${group!.id}`);
    assert.deepEqual((final.body.members as { value: string }[]).map((m) => m.value).sort(), [...members].sort());
    const audit = await groupsDb.knex('provisioning_audit').where({ team_id: group!.id });
    assert.equal(audit.length, 6);
  });

  test("a member added to a group: each member's user read once, the answer built from that read", async () => {
    const reads: string[][] = [];
    const views = new Set<usersV1.UserView | undefined>();
    const scim = await scimService(
      (client) =>
        new Proxy(client, {
          get(target, property, receiver) {
            const value = Reflect.get(target, property, receiver) as unknown;
            if (property !== 'batchGetUsers' || typeof value !== 'function') return value;
            return (request: usersV1.BatchGetUsersRequest, ...rest: unknown[]) => {
              reads.push([...request.ids]);
              views.add(request.view);
              return (value as (...a: unknown[]) => unknown).apply(target, [request, ...rest]);
            };
          },
        }),
    );
    const ids = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        scim
          .call('POST', '/Users', { userName: `reader${i}@example.com`, displayName: `Reader ${i}`, emails: [] })
          .then((r) => r.body.id as string),
      ),
    );
    const [newcomer, ...present] = ids as [string, ...string[]];
    const { group } = await groups.createGroup({
      displayName: 'Read once',
      members: present.map((userId) => ({ userId, isAdmin: false, isDriver: true })),
    });
    reads.length = 0;
    const answer = await scim.call(
      'PATCH',
      `/Groups/${group!.id}`,
      patchOp({ op: 'add', path: 'members', value: [{ value: newcomer }] }),
    );
    assert.equal(answer.status, 200);
    assert.deepEqual(
      (answer.body.members as { value: string; display: string }[]).map((m) => `${m.value} ${m.display}`).sort(),
      ids.map((id, i) => `${id} Reader ${i}`).sort(),
    );
    // One read: the present members (to compute the change) with the newcomer the body names (to know it exists);
    // none for the answer.
    assert.deepEqual(
      reads.map((r) => r.sort()),
      [[...present, newcomer].sort()],
    );
    assert.deepEqual([...views], [usersV1.UserView.USER_VIEW_MEMBER], 'only what a member list shows');

    // An id of no user is found missing in that same read: 400, no second read.
    reads.length = 0;
    const unknown = await scim.call(
      'PATCH',
      `/Groups/${group!.id}`,
      patchOp({ op: 'add', path: 'members', value: [{ value: 'Zz00000000' }] }),
    );
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.scimType, 'invalidValue');
    assert.match(String(unknown.body.detail), /Zz00000000/);
    assert.equal(reads.length, 1);
    assert.ok(reads[0]!.includes('Zz00000000'));
  });

  /** Users made through SCIM, for a group's members; the last one deleted (outside SCIM's view, still a member). */
  async function membersWithHidden(scim: Awaited<ReturnType<typeof scimService>>, prefix: string, count: number) {
    const ids = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        scim
          .call('POST', '/Users', { userName: `${prefix}${i}@example.com`, emails: [] })
          .then((r) => r.body.id as string),
      ),
    );
    assert.equal((await scim.call('DELETE', `/Users/${ids.at(-1)}`)).status, 204);
    return ids;
  }

  test('a group change sends the Groups service only its difference, and the audit names the members changed', async () => {
    const sent: groupsV1.PatchGroupRequest[] = [];
    const scim = await scimService(undefined, {
      groupsFaults: (client) =>
        new Proxy(client, {
          get(target, property, receiver) {
            const value = Reflect.get(target, property, receiver) as unknown;
            if (property !== 'patchGroup' || typeof value !== 'function') return value;
            return (request: groupsV1.PatchGroupRequest, ...rest: unknown[]) => {
              sent.push(request);
              return (value as (...a: unknown[]) => unknown).apply(target, [request, ...rest]);
            };
          },
        }),
    });
    const [admin, stayer, leaver, newcomer, hidden] = (await membersWithHidden(scim, 'diff', 5)) as [
      string,
      ...string[],
    ];
    const { group } = await groups.createGroup({
      displayName: 'Difference',
      members: [
        { userId: admin, isAdmin: true, isDriver: false },
        ...[stayer, leaver, hidden].map((userId) => ({ userId: userId!, isAdmin: false, isDriver: true })),
      ],
    });
    const path = `/Groups/${group!.id}`;
    const added = await scim.call('PATCH', path, patchOp({ op: 'Add', path: 'members', value: [{ value: newcomer }] }));
    assert.equal(added.status, 200);
    const removed = await scim.call(
      'PATCH',
      path,
      patchOp({ op: 'Remove', path: 'members', value: [{ value: leaver }] }),
    );
    assert.equal(removed.status, 200);
    // A PUT too: everyone visible but the admin and the stayer leaves; the deleted user's membership is not SCIM's.
    const replaced = await scim.call('PUT', path, {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'Difference 2',
      members: [{ value: admin }, { value: stayer }],
    });
    assert.equal(replaced.status, 200);
    assert.deepEqual(
      sent.map((r) => [r.displayName, r.addMembers.map((m) => m.userId), r.removeMemberIds]),
      [
        ['Difference', [newcomer], []],
        ['Difference', [], [leaver]],
        ['Difference 2', [], [newcomer]],
      ],
    );
    assert.deepEqual((replaced.body.members as { value: string }[]).map((m) => m.value).sort(), [admin, stayer].sort());
    const stored = (await groups.getGroup({ id: group!.id })).group!;
    assert.deepEqual(
      stored.members.map((m) => [m.userId, m.isAdmin]).sort(),
      [
        [admin, true],
        [stayer, false],
        [hidden, false],
      ].sort(),
      'the admin keeps the role; the hidden member stays',
    );
    const audit = (await groupsDb.knex('provisioning_audit').where({ team_id: group!.id }).orderBy('id')) as {
      operation: string;
      before: { members?: unknown };
      after: { displayName: string; members?: unknown };
      members_added: string[] | null;
      members_removed: string[] | null;
    }[];
    assert.deepEqual(
      audit.map((a) => [a.operation, a.after.displayName, a.members_added, a.members_removed]),
      [
        ['patch', 'Difference', [newcomer], []],
        ['patch', 'Difference', [], [leaver]],
        ['replace', 'Difference 2', [], [newcomer]],
      ],
    );
    assert.ok(
      audit.every((a) => a.before.members === undefined && a.after.members === undefined),
      'no whole member list in the audit',
    );
  });

  test('over a Groups service of the release before (no PatchGroup), a group change still lands, whole', async () => {
    const scim = await scimService(undefined, { groupsAddress: olderGroupsAddress });
    const [admin, newcomer, hidden] = (await membersWithHidden(scim, 'older', 3)) as [string, string, string];
    const { group } = await groups.createGroup({
      displayName: 'Older',
      members: [
        { userId: admin, isAdmin: true, isDriver: false },
        { userId: hidden, isAdmin: false, isDriver: true },
      ],
    });
    const added = await scim.call(
      'PATCH',
      `/Groups/${group!.id}`,
      patchOp({ op: 'add', path: 'members', value: [{ value: newcomer }] }),
    );
    assert.equal(added.status, 200, JSON.stringify(added.body));
    const stored = (await groups.getGroup({ id: group!.id })).group!;
    assert.deepEqual(
      stored.members.map((m) => [m.userId, m.isAdmin]).sort(),
      [
        [admin, true],
        [newcomer, false],
        [hidden, false],
      ].sort(),
    );
    const [entry] = (await groupsDb.knex('provisioning_audit').where({ team_id: group!.id })) as {
      after: { members: { value: string }[] };
      members_added: string[] | null;
    }[];
    assert.deepEqual(
      entry!.after.members.map((m) => m.value).sort(),
      [admin, newcomer].sort(),
      'the release before records the whole list',
    );
    assert.equal(entry!.members_added, null, 'null: not a change by difference');
  });

  test('a client demanding a version with If-Match gets 412 when it moved, and nothing is written', async () => {
    const scim = await scimService();
    const id = (await scim.call('POST', '/Users', { userName: 'ifmatch@example.com', emails: [] })).body.id as string;
    await scim.call('PATCH', `/Users/${id}`, patchOp({ op: 'replace', path: 'title', value: 'One' }));
    const refused = await scim.call('PATCH', `/Users/${id}`, patchOp({ op: 'replace', path: 'title', value: 'Two' }), {
      'if-match': 'W/"1"',
    });
    assert.equal(refused.status, 412);
    assert.equal((await scim.call('GET', `/Users/${id}`)).body.title, 'One');
    assert.equal((await userAudit(id)).length, 2);
  });
});

describe('filters on attributes that live in the owners now', () => {
  test('title, name.middleName and phoneNumbers of users, externalId of groups', async () => {
    const scim = await scimService();
    const make = async (userName: string, extra: Record<string, unknown>) =>
      (await scim.call('POST', '/Users', { userName, ...extra })).body.id as string;
    const fleet = await make('fleet@example.com', {
      title: 'Fleet Manager',
      name: { givenName: 'Fay', middleName: 'Quinn' },
      phoneNumbers: [
        { value: '+1 555 0142', type: 'work' },
        { value: '+1 555 0999', type: 'mobile' },
      ],
    });
    const driver = await make('driver@example.com', {
      title: 'Driver',
      phoneNumbers: [{ value: '+1 555 0142', type: 'mobile' }],
    });
    await make('nobody@example.com', {});
    const find = async (filter: string) => {
      const res = await scim.call('GET', `/Users?filter=${encodeURIComponent(filter)}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return (res.body.Resources as { id: string }[]).map((r) => r.id).sort();
    };
    assert.deepEqual(await find('title eq "fleet manager"'), [fleet], 'title is case-insensitive (RFC 7643)');
    assert.deepEqual(await find('title sw "Dr" and userName ew "@example.com"'), [driver]);
    assert.deepEqual(await find('name.middleName eq "quinn"'), [fleet]);
    assert.deepEqual(await find('phoneNumbers[type eq "work" and value co "0142"]'), [fleet]);
    assert.deepEqual(await find('phoneNumbers.value eq "+1 555 0142"'), [driver, fleet].sort());
    assert.deepEqual(await find('phoneNumbers pr and not (title eq "Driver") and title co "manager"'), [fleet]);

    const { group } = await groups.createGroup({ displayName: 'Filtered team', members: [] });
    await scim.call('PATCH', `/Groups/${group!.id}`, patchOp({ op: 'replace', path: 'externalId', value: 'okta-42' }));
    const byExternalId = await scim.call('GET', `/Groups?filter=${encodeURIComponent('externalId eq "okta-42"')}`);
    assert.deepEqual(
      (byExternalId.body.Resources as { id: string; externalId: string }[]).map((g) => [g.id, g.externalId]),
      [[String(group!.id), 'okta-42']],
    );
    const caseExact = await scim.call('GET', `/Groups?filter=${encodeURIComponent('externalId eq "OKTA-42"')}`);
    assert.equal(caseExact.body.totalResults, 0, 'externalId is case-exact');
  });
});

describe('the audit actor is the one the gateway attests, never a free field', () => {
  const user = (userName: string) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName,
    name: { givenName: 'Attested', familyName: 'Actor' },
  });
  const raw = (userName: string) => ({
    method: 'POST',
    path: '/Users',
    query: '',
    headers: { 'content-type': 'application/scim+json' },
    body: Buffer.from(JSON.stringify(user(userName))),
    clientId: 'okta-prod',
    organizationId: 1,
  });
  const refused = async (promise: Promise<unknown>) => {
    const err = (await promise.then(
      () => assert.fail('the call was accepted'),
      (e: unknown) => e,
    )) as { code: number };
    assert.equal(err.code, status.UNAUTHENTICATED);
  };
  const created = async (userName: string) =>
    (await usersDb.knex('users').whereRaw('lower(user_name) = ?', [userName.toLowerCase()])).length;

  test('a valid attestation: the audit row names the attested client', async () => {
    const { client } = await scimService();
    const request = raw('attested@example.com');
    const requestId = randomUUID();
    const actorAttestation = attestActor(ATTESTATION_SECRET, { ...request, actor: 'okta-prod', requestId });
    const answer = await client.handleRequest({ ...request, actorAttestation }, { requestId });
    assert.equal(answer.status, 201);
    const { id } = JSON.parse(Buffer.from(answer.body).toString()) as { id: string };
    assert.deepEqual(
      (await userAudit(id)).map((a) => a.actor),
      ['okta-prod'],
    );
  });

  const refusedFor = async (promise: Promise<unknown>) =>
    decodeServiceError(
      (await promise.then(
        () => assert.fail('the call was accepted'),
        (e: unknown) => e,
      )) as ServiceError,
    );
  const attestationsCounted = async (metrics: Metrics, version: string, result: string) =>
    (await metrics.registry.getSingleMetric('scim_attestations_total')!.get()).values.find(
      (v) => v.labels.version === version && v.labels.result === result,
    )?.value ?? 0;

  test('an attestation is taken once: its replay is refused as replayed, the same request freshly attested is served', async () => {
    const { client, metrics } = await scimService();
    const request = raw('replayed@example.com');
    const requestId = randomUUID();
    const actorAttestation = attestActor(ATTESTATION_SECRET, { ...request, actor: request.clientId, requestId });
    assert.equal((await client.handleRequest({ ...request, actorAttestation }, { requestId })).status, 201);
    const replay = await refusedFor(client.handleRequest({ ...request, actorAttestation }, { requestId }));
    assert.equal(replay.code, status.UNAUTHENTICATED);
    assert.equal(replay.reason, ATTESTATION_REPLAYED);
    assert.equal(await created('replayed@example.com'), 1);
    // The same request id again (an identity provider's retry may repeat it), under a fresh attestation: taken; here
    // the user exists already.
    const fresh = attestActor(ATTESTATION_SECRET, { ...request, actor: request.clientId, requestId });
    assert.equal((await client.handleRequest({ ...request, actorAttestation: fresh }, { requestId })).status, 409);
    assert.equal(await attestationsCounted(metrics, 'v2', 'replayed'), 1);
    assert.equal(await attestationsCounted(metrics, 'v2', 'accepted'), 2);
  });

  test('a header the service reads changed or added under a captured attestation: refused, nothing written', async () => {
    const { client } = await scimService();
    const request = raw('headers@example.com');
    const requestId = randomUUID();
    const actorAttestation = attestActor(ATTESTATION_SECRET, { ...request, actor: request.clientId, requestId });
    const altered: Record<string, string>[] = [
      { 'content-type': 'application/json' },
      { 'Content-Type': 'application/scim+json', 'If-None-Match': '*' },
      { 'content-type': 'application/scim+json', 'if-match': '' },
      {},
    ];
    for (const headers of altered) {
      const refusal = await refusedFor(client.handleRequest({ ...request, headers, actorAttestation }, { requestId }));
      assert.equal(refusal.reason, ACTOR_NOT_ATTESTED);
    }
    assert.equal(await created('headers@example.com'), 0);
    // A header the service does not read is neither covered nor used; the names' case is not part of the request.
    const headers = { 'Content-Type': 'application/scim+json', 'x-unread': 'anything' };
    assert.equal((await client.handleRequest({ ...request, headers, actorAttestation }, { requestId })).status, 201);
  });

  test('a genuine v1 attestation (no nonce, no headers; older releases) is refused, counted as unknown', async () => {
    const request = raw('upgrading@example.com');
    const requestId = randomUUID();
    const timestamp = Math.floor(Date.now() / 1000);
    // The v1 format as those releases defined it, under the right key: a MAC over the request without a nonce.
    const canonical = JSON.stringify([
      'mileage.actor-attestation',
      'v1',
      timestamp,
      ...[requestId, request.clientId, request.organizationId, request.method, request.path, request.query],
      createHash('sha256').update(request.body).digest('hex'),
    ]);
    const v1 = `v1.${timestamp}.${createHmac('sha256', ATTESTATION_SECRET).update(canonical).digest('base64url')}`;
    const { client, metrics } = await scimService();
    const refusal = await refusedFor(client.handleRequest({ ...request, actorAttestation: v1 }, { requestId }));
    assert.equal(refusal.reason, ACTOR_NOT_ATTESTED);
    assert.equal(await created('upgrading@example.com'), 0);
    assert.equal(await attestationsCounted(metrics, 'unknown', 'refused'), 1);
  });

  test('absent, malformed, forged, replayed for another actor, request or time: UNAUTHENTICATED, nothing written', async () => {
    const { client } = await scimService();
    const requestId = randomUUID();
    const request = raw('forged@example.com');
    const valid = attestActor(ATTESTATION_SECRET, { ...request, actor: request.clientId, requestId });
    // No attestation at all, or a malformed one.
    await refused(client.handleRequest({ ...request, actorAttestation: '' }, { requestId }));
    await refused(client.handleRequest({ ...request, actorAttestation: 'v1.garbage' }, { requestId }));
    // Signed with another secret.
    const forged = attestActor('an-attacker-guessing-the-secret-0123456789', {
      ...request,
      actor: request.clientId,
      requestId,
    });
    await refused(client.handleRequest({ ...request, actorAttestation: forged }, { requestId }));
    // A genuine attestation, but the actor, the request id or the body changed.
    await refused(
      client.handleRequest({ ...request, clientId: 'someone-else', actorAttestation: valid }, { requestId }),
    );
    // …or the organization changed: a credential of one organization cannot be replayed into another.
    await refused(client.handleRequest({ ...request, organizationId: 2, actorAttestation: valid }, { requestId }));
    await refused(client.handleRequest({ ...request, actorAttestation: valid }, { requestId: randomUUID() }));
    const otherBody = Buffer.from(JSON.stringify(user('other@example.com')));
    await refused(client.handleRequest({ ...request, body: otherBody, actorAttestation: valid }, { requestId }));
    // Genuine but outside its window (10 minutes old).
    const old = attestActor(
      ATTESTATION_SECRET,
      { ...request, actor: request.clientId, requestId },
      Date.now() - 600_000,
    );
    await refused(client.handleRequest({ ...request, actorAttestation: old }, { requestId }));
    // An empty actor, even attested.
    const noActor = attestActor(ATTESTATION_SECRET, { ...request, actor: '', requestId });
    await refused(client.handleRequest({ ...request, clientId: '', actorAttestation: noActor }, { requestId }));
    // No organization at all: refused before anything else.
    const noOrganization = (await client
      .handleRequest({ ...request, organizationId: 0, actorAttestation: valid }, { requestId })
      .then(
        () => assert.fail('the call was accepted'),
        (e: unknown) => e,
      )) as { code: number };
    assert.equal(noOrganization.code, status.FAILED_PRECONDITION);
    assert.equal(await created('forged@example.com'), 0);
    assert.equal(await created('other@example.com'), 0);
  });
});
