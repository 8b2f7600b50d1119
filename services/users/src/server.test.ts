import { status, type ServiceError } from '@grpc/grpc-js';
import { PROTO_FILES, usersV1 } from '@mileage/proto';
import { createGrpcClient, createLogger, decodeServiceError, HealthClient, Metrics, startGrpcServer, type GrpcServerHandle, type PromiseClient } from '@mileage/runtime';
import { createTestDatabase, type TestDatabase } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openDatabase } from './database';
import { createServer } from './server';

let testDb: TestDatabase;
let db: ReturnType<typeof openDatabase>;
let server: GrpcServerHandle;
let client: PromiseClient<usersV1.UsersServiceClient>;
let address: string;

function user(overrides: Partial<usersV1.User> = {}): usersV1.User {
  return {
    id: '',
    userName: `u${Math.random().toString(36).slice(2)}@example.com`,
    name: { givenName: 'Test', familyName: 'User' },
    emails: [{ value: 'test@example.com', type: 'work', primary: true }],
    active: true,
    timezone: 'America/Chicago',
    version: 0,
    ...overrides,
  };
}

async function rejection(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (err) {
    return decodeServiceError(err as ServiceError);
  }
  assert.fail('expected the call to fail');
}

before(async () => {
  testDb = await createTestDatabase('users');
  db = openDatabase({ url: testDb.url });
  await db.migrate();
  const logger = createLogger({ service: 'users-test', level: 'silent' });
  const metrics = new Metrics('users');
  server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [createServer({ knex: db.knex })],
    protoFiles: [PROTO_FILES.users],
    logger,
    metrics,
  });
  address = `127.0.0.1:${server.port}`;
  client = createGrpcClient(usersV1.UsersServiceClient, address, { defaultDeadlineMs: 5_000, metrics });
});

after(async () => {
  client.close();
  await server.shutdown(1_000);
  await db.close();
  await testDb.drop();
});

describe('UsersService over real gRPC and PostgreSQL', () => {
  test('migrations are idempotent and live in the users schema', async () => {
    const { applied } = await db.migrate();
    assert.deepEqual(applied, []);
    const { rows } = await db.knex.raw(`SELECT table_schema FROM information_schema.tables WHERE table_name = 'knex_migrations'`);
    assert.deepEqual(rows.map((r: { table_schema: string }) => r.table_schema), ['users']);
  });

  test('creates a user with a generated 10-character id and reads it back', async () => {
    const { user: created } = await client.createUser({ user: user({ userName: 'Erin@Example.com', displayName: 'Erin' }) });
    assert.match(created!.id, /^[A-Za-z0-9]{10}$/);
    assert.equal(created!.version, 1);
    assert.equal(created!.active, true);
    assert.ok(created!.createTime);
    const { user: read } = await client.getUser({ id: created!.id, includeDeleted: false });
    assert.deepEqual(read, created);
  });

  test('keeps a valid id sent by the caller, and refuses it when taken', async () => {
    const { user: created } = await client.createUser({ user: user({ id: 'Explicit01' }) });
    assert.equal(created!.id, 'Explicit01');
    const err = await rejection(client.createUser({ user: user({ id: 'Explicit01' }) }));
    assert.equal(err.code, status.ALREADY_EXISTS);
    assert.equal(err.reason, 'USER_ID_TAKEN');
  });

  test('userName is unique case-insensitively', async () => {
    await client.createUser({ user: user({ userName: 'frank@example.com' }) });
    const err = await rejection(client.createUser({ user: user({ userName: 'FRANK@example.COM' }) }));
    assert.equal(err.code, status.ALREADY_EXISTS);
    assert.equal(err.reason, 'USER_NAME_TAKEN');
  });

  test('exactly one of many concurrent creates with one userName wins', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => client.createUser({ user: user({ userName: i % 2 ? 'race@example.com' : 'RACE@example.com' }) })),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results) {
      if (r.status === 'rejected') assert.equal(decodeServiceError(r.reason as ServiceError).code, status.ALREADY_EXISTS);
    }
  });

  test('invalid input is refused with field violations and nothing is written', async () => {
    const before = await db.knex('users').count<{ count: string }[]>('* as count');
    const err = await rejection(
      client.createUser({
        user: user({ id: 'short', userName: '', timezone: 'Mars/Olympus', emails: [{ value: 'not-an-email', type: 'work', primary: true }] }),
      }),
    );
    assert.equal(err.code, status.INVALID_ARGUMENT);
    assert.deepEqual(err.fieldViolations.map((v) => v.field).sort(), ['emails[0].value', 'id', 'timezone', 'user_name']);
    const afterCount = await db.knex('users').count<{ count: string }[]>('* as count');
    assert.deepEqual(afterCount, before);
  });

  test('unknown and malformed ids', async () => {
    assert.equal((await rejection(client.getUser({ id: 'NoSuchUser', includeDeleted: false }))).code, status.NOT_FOUND);
    const malformed = await rejection(client.getUser({ id: 'bad id!', includeDeleted: false }));
    assert.equal(malformed.code, status.INVALID_ARGUMENT);
    assert.equal(malformed.fieldViolations[0]?.field, 'id');
  });

  test('batch get returns found users once each, in request order', async () => {
    const a = (await client.createUser({ user: user() })).user!;
    const b = (await client.createUser({ user: user() })).user!;
    const { users } = await client.batchGetUsers({ ids: [b.id, 'Missing123', a.id, b.id] });
    assert.deepEqual(users.map((u) => u.id), [b.id, a.id]);
    const tooMany = await rejection(client.batchGetUsers({ ids: Array.from({ length: 1001 }, () => a.id) }));
    assert.equal(tooMany.code, status.INVALID_ARGUMENT);
  });

  test('update bumps the version and honours expected_version', async () => {
    const created = (await client.createUser({ user: user() })).user!;
    const { user: updated } = await client.updateUser({ user: { ...created, active: false, displayName: 'Renamed' }, expectedVersion: 1 });
    assert.equal(updated!.version, 2);
    assert.equal(updated!.active, false);
    assert.equal(updated!.displayName, 'Renamed');
    assert.ok(updated!.updateTime! >= created.updateTime!);
    const stale = await rejection(client.updateUser({ user: { ...created, displayName: 'Lost' }, expectedVersion: 1 }));
    assert.equal(stale.code, status.ABORTED);
    const missing = await rejection(client.updateUser({ user: { ...created, id: 'Nobody0000' }, expectedVersion: 0 }));
    assert.equal(missing.code, status.NOT_FOUND);
  });

  test('the standard health service answers SERVING', async () => {
    const health = new HealthClient(address);
    try {
      assert.equal(await health.check(''), true);
      assert.equal(await health.check('mileage.users.v1.UsersService'), true);
      assert.equal(await health.check('no.such.Service'), false);
    } finally {
      health.close();
    }
  });
});
