/**
 * The gateway as it runs in production (its own process, main.js) in front of real services, with one dependency
 * frozen at a time: the gateway stays ready, the routes that do not need the frozen dependency keep answering 200,
 * the ones that do answer 503 at once, and /healthz/dependencies and `dependency_up` say what is down.
 */
import { freePort } from '@mileage/runtime/config';
import { startFaultProxy, testRedisUrl, waitFor, type FaultProxy } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import * as http from 'node:http';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ACTOR_ATTESTATION_SECRET, ALL_V1_SCOPES, startHarness, type Harness } from './harness';

let h: Harness;
let gateway: ChildProcess;
let base: string;
let metricsUrl: string;
let drives: FaultProxy;
let redis: FaultProxy;
let bob: string;

const hostPort = (address: string) => {
  const [host = '', port = ''] = address.split(':');
  return { host, port: Number(port) };
};

async function get(route: string, token?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${route}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const dependencyUp = async (name: string) =>
  ((await get('/healthz/dependencies')).body.dependencies as Record<string, { up: boolean }>)[name]!.up;

before(async () => {
  h = await startHarness();
  drives = await startFaultProxy(hostPort(h.drivesAddress));
  const redisUrl = new URL(testRedisUrl());
  redis = await startFaultProxy({ host: redisUrl.hostname, port: Number(redisUrl.port) });
  const [port, metricsPort] = [await freePort(), await freePort()];
  base = `http://127.0.0.1:${port}`;
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  gateway = spawn(process.execPath, [path.join(__dirname, '..', '..', 'dist', 'main.js')], {
    env: {
      PATH: process.env.PATH,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
      GRPC_PLAINTEXT: 'true', // the harness's services are in-process, plaintext
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      OIDC_ISSUER: h.issuer,
      USERS_ADDRESS: h.usersAddress,
      GROUPS_ADDRESS: h.groupsAddress,
      DRIVES_ADDRESS: drives.address,
      SCIM_ADDRESS: h.scimAddress,
      WEBHOOKS_ADDRESS: h.webhooksAddress,
      REDIS_URL: `redis://${redis.address}`,
      CURSOR_SECRET: 'resilience-test-cursor-secret-0123456789',
      ACTOR_ATTESTATION_SECRET,
      DEPENDENCY_CHECK_INTERVAL_MS: '200',
      // The harness's provisioning client acts for the demo organization, as in npm start.
      SCIM_CLIENT_ORGANIZATIONS: 'mileage-scim=demo',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, {
    timeoutMs: 20_000,
    what: 'gateway ready',
  });
  bob = await h.token('bob@example.com', ALL_V1_SCOPES);
});

after(async () => {
  gateway?.kill('SIGTERM');
  await drives?.close();
  await redis?.close();
  await h?.close();
});

describe('one dependency frozen at a time', () => {
  test('every dependency is up and every route answers 200', async () => {
    // Redis and the services' health channels connect after the gateway is ready: it does not wait for them.
    await waitFor(async () => (await get('/healthz/dependencies')).body.status === 'ok', { what: 'all up' });
    assert.equal((await get('/v1/users/me', bob)).status, 200);
    assert.equal((await get('/v1/users/BobDriver1/drives', bob)).status, 200);
    assert.equal((await get(`/v1/groups/${h.groups.other}`, bob)).status, 200);
  });

  test(
    'Drives frozen: the gateway stays ready, only the drive routes fail (503 at once)',
    { timeout: 30_000 },
    async () => {
      drives.freeze();
      try {
        await waitFor(async () => !(await dependencyUp('drives')), { what: 'drives reported down' });
        const ready = await get('/readyz');
        assert.equal(ready.status, 200);
        assert.deepEqual(ready.body.checks, { signing_keys: true, accepting: true });
        assert.equal((await get('/v1/users/me', bob)).status, 200);
        assert.equal((await get('/v1/groups', bob)).status, 200);
        assert.equal((await get(`/v1/groups/${h.groups.other}`, bob)).status, 200);
        // 503 (known down), not 504 (the 2 s deadline passed on the frozen connection).
        const failing = await get('/v1/users/BobDriver1/drives', bob);
        assert.equal(failing.status, 503);
        assert.equal((await get(`/v1/groups/${h.groups.other}/reported-drives`, bob)).status, 503);
        const metrics = await (await fetch(metricsUrl)).text();
        assert.match(metrics, /^dependency_up\{dependency="drives",service="gateway"\} 0$/m);
        assert.match(metrics, /^dependency_up\{dependency="users",service="gateway"\} 1$/m);
      } finally {
        await drives.resume();
      }
      await waitFor(async () => (await get('/v1/users/BobDriver1/drives', bob)).status === 200, {
        what: 'drive routes back',
      });
      assert.equal((await get('/healthz/dependencies')).body.status, 'ok');
    },
  );

  test(
    'Redis frozen: the gateway stays ready and limits on its own; every route answers 200',
    { timeout: 30_000 },
    async () => {
      redis.freeze();
      try {
        await waitFor(async () => !(await dependencyUp('redis')), { what: 'redis reported down' });
        assert.equal((await get('/readyz')).status, 200);
        const me = await fetch(`${base}/v1/users/me`, { headers: { authorization: `Bearer ${bob}` } });
        assert.equal(me.status, 200);
        assert.ok(me.headers.get('x-ratelimit-limit'), 'still rate limited (in memory)');
        assert.equal((await get('/v1/users/BobDriver1/drives', bob)).status, 200);
        assert.equal((await get(`/v1/groups/${h.groups.other}`, bob)).status, 200);
      } finally {
        await redis.resume();
      }
      await waitFor(async () => await dependencyUp('redis'), { what: 'redis back' });
    },
  );
});

describe('SIGTERM', () => {
  test(
    'a request in flight when the drain starts is answered, and the drain ends with it, not at the shutdown timeout',
    { timeout: 30_000 },
    async () => {
      const scim = await h.scimToken();
      const body = Buffer.from('{}');
      // A keep-alive client, as a load balancer or an ingress controller is: its connection stays open after a response.
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const req = http.request(`${base}/scim/v2/Users`, {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${scim}`,
          'content-type': 'application/scim+json',
          'content-length': String(body.length),
          // The server answers 100 Continue when it has taken the request: it is in flight until the body is sent.
          expect: '100-continue',
        },
      });
      const answered = new Promise<http.IncomingMessage>((resolve, reject) => {
        req.once('response', resolve);
        req.once('error', reject);
      });
      await once(req, 'continue');
      const exited = once(gateway, 'exit') as Promise<[number | null, string | null]>;
      const stopping = Date.now();
      gateway.kill('SIGTERM');
      // Draining: readiness is off and no new connection is taken.
      await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status !== 200, {
        what: 'draining',
      });
      req.end(body);
      const res = await answered;
      res.resume();
      assert.equal(res.statusCode, 400, 'the SCIM service judged the body');
      const [code] = await exited;
      agent.destroy();
      assert.equal(code, 0, 'every shutdown step finished');
      const tookMs = Date.now() - stopping;
      assert.ok(tookMs < 5_000, `drained in ${tookMs} ms, well within SHUTDOWN_TIMEOUT_MS (10 s)`);
    },
  );
});
