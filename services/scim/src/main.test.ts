/**
 * The SCIM service as it runs in production (main.js, its own process, its clients made by runService). It has no
 * database: it starts without DATABASE_URL, stays ready whatever PostgreSQL does, and answers 503 (with Retry-After,
 * at once, without calling) only the requests whose owner its health checks see down: here Groups at an address where
 * nothing listens, then Users reporting NOT_SERVING (its database down), and normally again once Users is back. Users is
 * one stub gRPC server that answers every call NOT_FOUND (so a call that is made shows as a 404), with the real health
 * service.
 */
import { PROTO_FILES, scimV1, usersV1 } from '@mileage/proto';
import {
  ACTOR_NOT_ATTESTED,
  attestActor,
  createGrpcClient,
  decodeServiceError,
  errors,
  HealthClient,
  startGrpcServer,
  type GrpcServerHandle,
  type ServiceRegistration,
} from '@mileage/runtime/grpc';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import { freePort } from '@mileage/runtime/config';
import { waitFor } from '@mileage/runtime/testing';
import { status, type ServiceDefinition, type ServiceError } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { test, type TestContext } from 'node:test';

function answeringNotFound(definition: ServiceDefinition): ServiceRegistration {
  const handlers = Object.fromEntries(
    Object.keys(definition).map((name) => [
      name,
      () => {
        calls++;
        return Promise.reject(errors.notFound('no such resource'));
      },
    ]),
  );
  return { definition, handlers };
}
let calls = 0;
const SECRET = 'scim-main-test-attestation-secret-0123456789';

/** main.js in its own process beside `users` (the stub), Groups where nothing listens; stopped when the test ends. */
async function scimProcess(t: TestContext, users: GrpcServerHandle, env: Record<string, string>) {
  const [grpcPort, metricsPort, nobodyListens] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(process.execPath, [path.join(__dirname, 'main.js')], {
    env: {
      PATH: process.env.PATH,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
      GRPC_PLAINTEXT: 'true', // its Users is an in-process plaintext server
      GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
      METRICS_PORT: String(metricsPort),
      USERS_ADDRESS: `127.0.0.1:${users.port}`,
      GROUPS_ADDRESS: `127.0.0.1:${nobodyListens}`,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const health = new HealthClient(`127.0.0.1:${grpcPort}`);
  const client = createGrpcClient(scimV1.ScimServiceClient, `127.0.0.1:${grpcPort}`, { defaultDeadlineMs: 10_000 });
  t.after(async () => {
    child.kill('SIGTERM');
    client.close();
    health.close();
    await users.shutdown(1_000);
  });
  /** GET `p` attested with `secret`, as a gateway holding it sends it. */
  const get = (p: string, secret = SECRET) => {
    const request = {
      method: 'GET',
      path: p,
      query: '',
      headers: {},
      body: Buffer.alloc(0),
      clientId: 'scim',
      organizationId: 1,
    };
    const requestId = randomUUID();
    const actorAttestation = attestActor(secret, { ...request, actor: 'scim', requestId });
    return client.handleRequest({ ...request, actorAttestation }, { requestId });
  };
  await waitFor(() => health.check('', 500), { timeoutMs: 20_000, what: 'scim serving' });
  return { health, metricsPort, get };
}

const startUsers = () =>
  startGrpcServer({
    address: '127.0.0.1:0',
    services: [answeringNotFound(usersV1.UsersServiceService as ServiceDefinition)],
    protoFiles: [PROTO_FILES.users],
    logger: createLogger({ service: 'users', level: 'silent' }),
    metrics: new Metrics('users'),
  });

test('no database; ready throughout; 503 only for the requests whose owner is down', async (t) => {
  const users = await startUsers();
  const { health, metricsPort, get } = await scimProcess(t, users, { ACTOR_ATTESTATION_SECRET: SECRET });
  const report = async () =>
    (await (await fetch(`http://127.0.0.1:${metricsPort}/healthz/dependencies`)).json()) as {
      status: string;
      dependencies: Record<string, { up: boolean; checkedAt: string | null }>;
    };
  const ready = async () => {
    assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status, 200, '/readyz');
    assert.equal(await health.check('', 500), true, 'gRPC health of the server');
    assert.equal(await health.check('mileage.scim.v1.ScimService', 500), true, 'gRPC health of the SCIM service');
  };
  const unavailable = async (p: string) => {
    const res = await get(p);
    assert.equal(res.status, 503, `GET ${p}: ${Buffer.from(res.body).toString()}`);
    assert.ok(res.headers['Retry-After'] ?? res.headers['retry-after'], 'with Retry-After');
  };

  await waitFor(async () => (await report()).dependencies.groups?.up === false, { what: 'groups seen down' });
  assert.deepEqual(Object.keys((await report()).dependencies).sort(), ['groups', 'users'], 'no database to watch');
  await ready();
  assert.equal((await get('/Users/AliceAdm01')).status, 404, 'Users is up: it was asked');
  await unavailable('/Groups/42');
  const asked = calls;

  users.setServing(false);
  await waitFor(async () => (await report()).dependencies.users?.up === false, { what: 'users seen down' });
  await ready();
  for (const p of ['/Users/AliceAdm01', '/Groups/42']) await unavailable(p);
  assert.equal(calls, asked, 'no call reached an owner known to be down');
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  assert.match(metrics, /^dependency_up\{dependency="users",service="scim"\} 0$/m);
  assert.match(metrics, /^dependency_up\{dependency="groups",service="scim"\} 0$/m);

  users.setServing(true);
  await waitFor(async () => (await report()).dependencies.users?.up === true, { what: 'users seen back' });
  assert.equal((await get('/Users/AliceAdm01')).status, 404, 'asked again');
  await unavailable('/Groups/42');
});

test('while the attestation key rotates: the current and the previous key are accepted, any other refused', async (t) => {
  const previous = 'scim-main-test-previous-attestation-secret-0123';
  const { get } = await scimProcess(t, await startUsers(), {
    ACTOR_ATTESTATION_SECRET: SECRET,
    ACTOR_ATTESTATION_PREVIOUS_SECRET: previous,
  });
  // Served (the stub Users answers 404): the call got past the attestation.
  assert.equal((await get('/Users/AliceAdm01', SECRET)).status, 404);
  assert.equal((await get('/Users/AliceAdm01', previous)).status, 404);
  const asked = calls;
  const refused = (await get('/Users/AliceAdm01', 'a-key-this-replica-does-not-hold-0123456789').then(
    () => assert.fail('accepted'),
    (e: unknown) => e,
  )) as ServiceError;
  assert.equal(refused.code, status.UNAUTHENTICATED);
  assert.equal(decodeServiceError(refused).reason, ACTOR_NOT_ATTESTED);
  assert.equal(calls, asked, 'refused before any owner was asked');
});
