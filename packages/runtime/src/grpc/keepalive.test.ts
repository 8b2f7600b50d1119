/**
 * One replica of two frozen (a relay that stops relaying: what SIGSTOP does to a process — connections stay open,
 * nothing answers). The client's keepalive pings find the frozen connection within KEEPALIVE_TIME_MS +
 * KEEPALIVE_TIMEOUT_MS and close it; the round robin then sends every call to the replica that answers, and a read
 * caught on the frozen connection is retried there. Without the pings half the calls would wait out their deadline.
 */
import { PROTO_FILES, usersV1 } from '@mileage/proto';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createGrpcClient, KEEPALIVE_TIME_MS, KEEPALIVE_TIMEOUT_MS } from './grpc-client';
import { startGrpcServer, type GrpcServerHandle } from './grpc-server';
import { createLogger } from '../telemetry/logger';
import { Metrics } from '../telemetry/metrics';
import { startFaultProxy, type FaultProxy } from '../testing';
import { stubUser, usersServiceStub } from './users-stub.fixture';

let server: GrpcServerHandle;
let replicas: FaultProxy[];

before(async () => {
  server = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [
      {
        definition: usersV1.UsersServiceService,
        handlers: usersServiceStub({ getUser: async (req) => ({ user: stubUser(req.id) }) }) as never,
      },
    ],
    protoFiles: [PROTO_FILES.users],
    logger: createLogger({ service: 'keepalive-test', level: 'silent' }),
    metrics: new Metrics('keepalive-test'),
  });
  replicas = await Promise.all([0, 1].map(() => startFaultProxy({ host: '127.0.0.1', port: server.port })));
});

after(async () => {
  await Promise.all(replicas.map((r) => r.close()));
  await server.shutdown(1_000);
});

test('a frozen replica leaves the round robin: every read succeeds on the other, none waits out its deadline', async (t) => {
  // Longer than the keepalive's bound: a call that waited for the frozen replica would fail with DEADLINE_EXCEEDED.
  const deadlineMs = 4 * (KEEPALIVE_TIME_MS + KEEPALIVE_TIMEOUT_MS);
  const client = createGrpcClient(usersV1.UsersServiceClient, `ipv4:${replicas.map((r) => r.address).join(',')}`, {
    defaultDeadlineMs: deadlineMs,
  });
  try {
    // Both replicas connected and in turn.
    for (let i = 0; i < 4; i++)
      assert.equal((await client.getUser({ id: `warm${i}`, includeDeleted: false })).user?.id, `warm${i}`);
    replicas[1]!.freeze();
    const started = Date.now();
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        client.getUser({ id: `call${i}`, includeDeleted: false }).then(
          (res) => res.user?.id,
          (err: Error) => err.message,
        ),
      ),
    );
    assert.deepEqual(
      outcomes,
      Array.from({ length: 20 }, (_, i) => `call${i}`),
    );
    // Recorded for the reader, not asserted: how long the calls caught on the frozen replica took.
    t.diagnostic(`20 reads across a frozen replica settled after ${Date.now() - started} ms`);
    // The frozen replica is out of the rotation: further reads go to the other at once, and succeed.
    for (let i = 0; i < 6; i++)
      assert.equal((await client.getUser({ id: `next${i}`, includeDeleted: false })).user?.id, `next${i}`);
  } finally {
    await replicas[1]!.resume();
    client.close();
  }
});
