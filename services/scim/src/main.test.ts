/**
 * The SCIM service as it runs in production (main.js, its own process, its clients made by runService) while the
 * owners it calls report NOT_SERVING (their database is down): once its health checks see that, provisioning
 * requests that need them answer 503 with Retry-After at once, without calling them, and answer normally again when
 * they are back. The owners here are one stub gRPC server that answers every call NOT_FOUND (so a call that is made
 * shows as a 404), with the real health service.
 */
import { groupsV1, PROTO_FILES, scimV1, usersV1 } from '@mileage/proto';
import {
  attestActor,
  createGrpcClient,
  createLogger,
  errors,
  freePort,
  HealthClient,
  Metrics,
  startGrpcServer,
  type ServiceRegistration,
} from '@mileage/runtime';
import { createTestDatabase, waitFor } from '@mileage/runtime/testing';
import type { ServiceDefinition } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { test } from 'node:test';

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

test('owners NOT_SERVING: requests that need them answer 503 without calling them, then recover', async (t) => {
  const testDb = await createTestDatabase('scim_main');
  const owners = await startGrpcServer({
    address: '127.0.0.1:0',
    services: [
      answeringNotFound(usersV1.UsersServiceService as ServiceDefinition),
      answeringNotFound(groupsV1.GroupsServiceService as ServiceDefinition),
    ],
    protoFiles: [PROTO_FILES.users, PROTO_FILES.groups],
    logger: createLogger({ service: 'owners', level: 'silent' }),
    metrics: new Metrics('owners'),
  });
  const [grpcPort, metricsPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [path.join(__dirname, 'main.js')], {
    env: {
      PATH: process.env.PATH,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
      DATABASE_URL: testDb.url,
      MIGRATION_DATABASE_URL: testDb.url,
      MIGRATE_ON_START: 'true',
      ACTOR_ATTESTATION_SECRET: SECRET,
      GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
      METRICS_PORT: String(metricsPort),
      USERS_ADDRESS: `127.0.0.1:${owners.port}`,
      GROUPS_ADDRESS: `127.0.0.1:${owners.port}`,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const health = new HealthClient(`127.0.0.1:${grpcPort}`);
  const client = createGrpcClient(scimV1.ScimServiceClient, `127.0.0.1:${grpcPort}`, { defaultDeadlineMs: 10_000 });
  t.after(async () => {
    child.kill('SIGTERM');
    client.close();
    health.close();
    await owners.shutdown(1_000);
    await testDb.drop();
  });
  const report = async () =>
    (await (await fetch(`http://127.0.0.1:${metricsPort}/healthz/dependencies`)).json()) as {
      status: string;
      dependencies: Record<string, { up: boolean; checkedAt: string | null }>;
    };
  const get = (p: string) => {
    const request = { method: 'GET', path: p, query: '', headers: {}, body: Buffer.alloc(0), clientId: 'scim' };
    const requestId = randomUUID();
    const actorAttestation = attestActor(SECRET, { ...request, actor: 'scim', requestId });
    return client.handleRequest({ ...request, actorAttestation }, { requestId });
  };
  const paths = ['/Users/AliceAdm01', '/Groups/42'];

  await waitFor(() => health.check('', 500), { timeoutMs: 20_000, what: 'scim serving' });
  await waitFor(async () => Boolean((await report()).dependencies.users?.checkedAt), { what: 'owners checked' });
  for (const p of paths) assert.equal((await get(p)).status, 404, `GET ${p}: the owner was asked`);
  const asked = calls;

  owners.setServing(false);
  await waitFor(
    async () => {
      const { dependencies } = await report();
      return !dependencies.users?.up && !dependencies.groups?.up;
    },
    { timeoutMs: 20_000, what: 'users and groups seen down' },
  );
  const r = await report();
  assert.equal(r.status, 'degraded');
  assert.equal(r.dependencies.postgres?.up, true);
  assert.equal(await health.check('mileage.scim.v1.ScimService', 500), true, 'its own database is up: SERVING');
  for (const p of paths) {
    const res = await get(p);
    assert.equal(res.status, 503, `GET ${p}: ${Buffer.from(res.body).toString()}`);
    assert.ok(res.headers['Retry-After'] ?? res.headers['retry-after'], 'with Retry-After');
  }
  assert.equal(calls, asked, 'no call reached an owner known to be down');
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  assert.match(metrics, /^dependency_up\{dependency="users",service="scim"\} 0$/m);
  assert.match(metrics, /^dependency_up\{dependency="groups",service="scim"\} 0$/m);

  owners.setServing(true);
  await waitFor(async () => (await report()).status === 'ok', { timeoutMs: 20_000, what: 'owners seen back' });
  for (const p of paths) assert.equal((await get(p)).status, 404, `GET ${p}: asked again`);
});
