// The write journal against the real Users and Groups services over gRPC and real PostgreSQL: a crash between
// the owner's write and the audit entry, an unknown outcome, and racing changes.
import { status } from '@grpc/grpc-js';
import { createServer as createGroupsServer, openDatabase as openGroupsDatabase } from '@mileage/groups';
import { groupsV1, PROTO_FILES, scimV1, usersV1 } from '@mileage/proto';
import {
  createGrpcClient,
  createLogger,
  decodeServiceError,
  freePort,
  Metrics,
  startGrpcServer,
  type GrpcServerHandle,
  type PromiseClient,
} from '@mileage/runtime';
import { createTestDatabase, type TestDatabase } from '@mileage/runtime/testing';
import { createServer as createUsersServer, openDatabase as openUsersDatabase } from '@mileage/users';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openDatabase } from './database';
import { createJournal, type JournalOptions } from './journal';
import { createServer } from './server';

const logger = createLogger({ service: 'scim-test', level: 'silent' });
let testDb: TestDatabase;
let usersDb: ReturnType<typeof openUsersDatabase>;
let groupsDb: ReturnType<typeof openGroupsDatabase>;
let scimDb: ReturnType<typeof openDatabase>;
const servers: GrpcServerHandle[] = [];
const closers: { close(): void }[] = [];
let usersAddress: string;
let groupsAddress: string;
let users: PromiseClient<usersV1.UsersServiceClient>;
let groups: PromiseClient<groupsV1.GroupsServiceClient>;

/** A SCIM service over gRPC whose journal has the given options (faults), talking to the given Users address. */
async function scimService(journalOptions: JournalOptions = {}, options: { usersAddress?: string } = {}) {
  const usersClient = createGrpcClient(usersV1.UsersServiceClient, options.usersAddress ?? usersAddress, {
    defaultDeadlineMs: 2_000,
  });
  const groupsClient = createGrpcClient(groupsV1.GroupsServiceClient, groupsAddress, { defaultDeadlineMs: 2_000 });
  closers.push(usersClient, groupsClient);
  const journal = createJournal({
    knex: scimDb.knex,
    users: usersClient,
    groups: groupsClient,
    logger,
    options: journalOptions,
  });
  const server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [
      createServer({
        users: usersClient,
        groups: groupsClient,
        logger,
        baseUrl: 'https://mileage.test/scim/v2',
        journal,
      }),
    ],
    protoFiles: [PROTO_FILES.scim],
    logger,
    metrics: new Metrics('scim'),
  });
  servers.push(server);
  const client = createGrpcClient(scimV1.ScimServiceClient, `127.0.0.1:${server.port}`, { defaultDeadlineMs: 10_000 });
  closers.push(client);
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    client
      .handleRequest({
        method,
        path,
        query: path.includes('?') ? path.slice(path.indexOf('?') + 1) : '',
        headers: { 'content-type': 'application/scim+json', ...headers },
        body: body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body)),
        clientId: 'test-idp',
      })
      .then((r) => ({
        status: r.status,
        headers: r.headers,
        body: r.body.length ? JSON.parse(Buffer.from(r.body).toString()) : undefined,
      }));
  return { journal, call };
}

const count = async (table: string) =>
  Number((await scimDb.knex(table).count<{ count: string }[]>('* as count'))[0]!.count);

before(async () => {
  testDb = await createTestDatabase('scim');
  usersDb = openUsersDatabase({ url: testDb.url });
  groupsDb = openGroupsDatabase({ url: testDb.url });
  scimDb = openDatabase({ url: testDb.url });
  for (const db of [usersDb, groupsDb, scimDb]) await db.migrate();
  const u = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [createUsersServer({ knex: usersDb.knex })],
    protoFiles: [PROTO_FILES.users],
    logger,
    metrics: new Metrics('users'),
  });
  const g = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [createGroupsServer({ knex: groupsDb.knex })],
    protoFiles: [PROTO_FILES.groups],
    logger,
    metrics: new Metrics('groups'),
  });
  servers.push(u, g);
  usersAddress = `127.0.0.1:${u.port}`;
  groupsAddress = `127.0.0.1:${g.port}`;
  users = createGrpcClient(usersV1.UsersServiceClient, usersAddress, { defaultDeadlineMs: 5_000 });
  groups = createGrpcClient(groupsV1.GroupsServiceClient, groupsAddress, { defaultDeadlineMs: 5_000 });
  closers.push(users, groups);
});

after(async () => {
  for (const c of closers) c.close();
  for (const s of servers.reverse()) await s.shutdown(1_000);
  for (const db of [scimDb, groupsDb, usersDb]) await db.close();
  await testDb.drop();
});

describe('WriteJournal: every change and its audit entry, or neither', () => {
  test('a crash after the Users service applied a create: recovery writes the audit entry and the SCIM-side attributes', async () => {
    const crashing = await scimService({
      faults: {
        afterOwnerWrite: () => {
          throw new Error('simulated crash');
        },
      },
    });
    await assert.rejects(
      crashing.call('POST', '/Users', { userName: 'crash@example.com', title: 'Night shift' }),
      (err: { code?: number }) => err.code === status.INTERNAL,
    );
    const { users: found } = await users.listUsers({
      filter: {
        expr: {
          $case: 'comparison',
          value: { attribute: 'userName', operator: 1, value: { $case: 'stringValue', value: 'crash@example.com' } },
        },
      },
      offset: 0,
      limit: 10,
    });
    assert.equal(found.length, 1, 'the owner applied the write');
    const id = found[0]!.id;
    assert.equal((await scimDb.knex('audit_log').where({ resource_id: id })).length, 0, 'not audited yet');
    assert.equal(await count('pending_writes'), 1);

    const healthy = await scimService();
    assert.deepEqual(await healthy.journal.recover(0), { applied: 1, abandoned: 0, unresolved: 0 });
    const audit = await scimDb.knex('audit_log').where({ resource_id: id });
    assert.equal(audit.length, 1);
    assert.equal(audit[0].operation, 'create');
    assert.equal(audit[0].recovered, true);
    assert.equal(audit[0].actor, 'test-idp');
    assert.equal(await count('pending_writes'), 0);
    const read = await healthy.call('GET', `/Users/${id}`);
    assert.equal(read.body.title, 'Night shift', 'the attributes kept by SCIM were applied by recovery');
    assert.deepEqual(
      await healthy.journal.recover(0),
      { applied: 0, abandoned: 0, unresolved: 0 },
      'settling is done once',
    );
  });

  test('an unknown outcome (Users unreachable) leaves an intent; recovery fences it so it can never apply, and audits nothing', async () => {
    const created = (
      await users.createUser({
        user: {
          id: '',
          userName: 'fence@example.com',
          name: { givenName: 'Fen', familyName: 'Ce' },
          emails: [],
          active: true,
          timezone: 'UTC',
          version: 0,
        },
        writeId: '',
      })
    ).user!;
    const auditBefore = await count('audit_log');
    const deadAddress = `127.0.0.1:${await freePort()}`;
    const cut = await scimService({}, { usersAddress: deadAddress });
    const res = await cut.call('PATCH', `/Users/${created.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', path: 'displayName', value: 'Never' }],
    });
    assert.equal(res.status, 503, 'reading the user already fails; nothing is attempted');
    assert.equal(await count('pending_writes'), 0);

    // The worst case: the intent is recorded and the call's outcome is unknown. Reproduce it directly.
    const journal = (await scimService()).journal;
    let writeId = '';
    await assert.rejects(
      journal.perform(
        { actor: 'test-idp', operation: 'patch', resourceType: 'User', resourceId: created.id, sideEffects: {} },
        async (id) => {
          writeId = id;
          throw Object.assign(new Error('deadline'), { code: status.DEADLINE_EXCEEDED });
        },
        () => ({ resourceId: created.id }),
      ),
    );
    assert.equal(await count('pending_writes'), 1);
    assert.deepEqual(await journal.recover(0), { applied: 0, abandoned: 1, unresolved: 0 });
    assert.equal(await count('pending_writes'), 0);
    assert.equal(await count('audit_log'), auditBefore);
    // The request, arriving late with its write id, is refused: no change without its audit entry.
    const late = await users
      .updateUser({ user: { ...created, displayName: 'Too late' }, expectedVersion: 0, writeId })
      .catch((err: unknown) => decodeServiceError(err as never));
    assert.equal((late as { code: number }).code, status.FAILED_PRECONDITION);
    assert.equal((await users.getUser({ id: created.id, includeDeleted: false })).user!.displayName, undefined);
  });

  test('racing PATCHes of one user all land (one write per user at a time), each audited once, none lost', async () => {
    const scim = await scimService();
    const created = await scim.call('POST', '/Users', { userName: 'busy@example.com', emails: [] });
    const id = created.body.id as string;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        scim.call('PATCH', `/Users/${id}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'add', path: 'phoneNumbers', value: [{ value: `+1 555 010${i}`, type: 'work' }] }],
        }),
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
    const audit = await scimDb.knex('audit_log').where({ resource_id: id, operation: 'patch' });
    assert.equal(audit.length, 8, 'one audit entry per applied change');
    assert.equal(final.body.meta.version, 'W/"9"');
    assert.equal(await count('pending_writes'), 0, 'every slot was given back');
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
        scim.call('PATCH', `/Groups/${group!.id}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'add', path: 'members', value: [{ value }] }],
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      Array(6).fill(200),
    );
    const final = await scim.call('GET', `/Groups/${group!.id}`);
    assert.deepEqual((final.body.members as { value: string }[]).map((m) => m.value).sort(), [...members].sort());
  });

  test('a write applied by the owner but not settled: readers see its SCIM-side state; the next write waits for it, then recovers it', async () => {
    const crashing = await scimService({
      faults: {
        afterOwnerWrite: () => {
          throw new Error('simulated crash');
        },
      },
    });
    const patience = await scimService({ slotWaitMs: 100 });
    const eager = await scimService({ recoveryAfterMs: 0 });
    const created = await patience.call('POST', '/Users', {
      userName: 'halfway@example.com',
      title: 'Day shift',
      emails: [],
    });
    const id = created.body.id as string;
    const patch = (value: string) => ({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', path: 'title', value }],
    });

    await assert.rejects(
      crashing.call('PATCH', `/Users/${id}`, patch('Night shift')),
      (err: { code?: number }) => err.code === status.INTERNAL,
    );
    const read = await patience.call('GET', `/Users/${id}`);
    assert.equal(read.body.meta.version, 'W/"2"', 'the Users service applied the write');
    assert.equal(read.body.title, 'Night shift', 'and the reader sees the attributes that go with that version');

    const blocked = await patience.call('PATCH', `/Users/${id}`, patch('Swing shift'));
    assert.equal(blocked.status, 503, 'the slot is held by the unsettled write; nothing is computed from half of it');
    assert.equal(blocked.headers['Retry-After'], '1');

    const next = await eager.call('PATCH', `/Users/${id}`, patch('Swing shift'));
    assert.equal(next.status, 200, 'a writer finding an abandoned slot settles it first');
    assert.equal(next.body.title, 'Swing shift');
    assert.equal(next.body.meta.version, 'W/"3"');
    const audit = await scimDb.knex('audit_log').where({ resource_id: id }).orderBy('id');
    assert.deepEqual(
      audit.map((a: { operation: string; recovered: boolean }) => [a.operation, a.recovered]),
      [
        ['create', false],
        ['patch', true],
        ['patch', false],
      ],
    );
    assert.equal(audit[1].after.title, 'Night shift');
  });
});
