/**
 * Revocation on the very next request, at every gateway replica (CONTRACT §7): gateway apps (replicas A, B and C)
 * in front of the same services, hearing SCIM token revocations through a real Redis, each keeping resolved tokens
 * for 30 s. A revoked SCIM secret token, a user deactivated by SCIM and an organization admin demoted are refused by
 * both on the first request after the change; a replica that cannot hear revocations asks the Users service instead.
 */
import { usersV1 } from '@mileage/proto';
import { createGrpcClient } from '@mileage/runtime/grpc';
import { startFaultProxy, testRedisUrl, waitFor, type FaultProxy } from '@mileage/runtime/testing';
import type { Express } from 'express';
import { Redis } from 'ioredis';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { RedisRevocations } from '@mileage/gateway';
import { GLOBEX, startHarness, type Harness } from './harness';

let h: Harness;
let a: Express;
let b: Express;
let c: Express;
let feedA: RedisRevocations;
let feedB: RedisRevocations;
/**
 * Replica C reaches Redis directly, as replicas do; B through the test's proxy. A revocation's 204 waits for every
 * subscribed replica's acknowledgement, so "at once" holds of all three.
 */
let feedC: RedisRevocations;
/** Replica B reaches Redis through this proxy, so its subscription can be cut or frozen alone. */
let proxy: FaultProxy;
const clients: Redis[] = [];
let organizations: ReturnType<typeof createGrpcClient<usersV1.OrganizationsServiceClient>>;

const CACHE_SECONDS = 30;
/** Short, so that a test can wait for it: a revocation's 204 waits at most this for a replica's acknowledgement. */
const ACKNOWLEDGEMENT_TIMEOUT_MS = 300;
let channel: string;

before(async () => {
  h = await startHarness();
  const url = new URL(testRedisUrl());
  proxy = await startFaultProxy({ host: url.hostname, port: Number(url.port) });
  channel = `test:revocations:${randomUUID()}`;
  const redisA = new Redis(url.toString(), { enableOfflineQueue: false, commandTimeout: 500 });
  const redisB = new Redis(`redis://${proxy.address}`, { enableOfflineQueue: false, commandTimeout: 500 });
  const redisC = new Redis(url.toString(), { enableOfflineQueue: false, commandTimeout: 500 });
  clients.push(redisA, redisB, redisC);
  for (const c of clients) c.on('error', () => undefined);
  feedA = new RedisRevocations({ redis: redisA, channel, acknowledgementTimeoutMs: ACKNOWLEDGEMENT_TIMEOUT_MS });
  feedB = new RedisRevocations({ redis: redisB, channel, heartbeatMs: 200 });
  feedC = new RedisRevocations({ redis: redisC, channel });
  await waitFor(() => feedA.listening() && feedB.listening() && feedC.listening(), { what: 'the replicas subscribed' });
  a = h.app({ revocations: feedA, scimTokenCacheSeconds: CACHE_SECONDS });
  b = h.app({ revocations: feedB, scimTokenCacheSeconds: CACHE_SECONDS });
  c = h.app({ revocations: feedC, scimTokenCacheSeconds: CACHE_SECONDS });
  organizations = createGrpcClient(usersV1.OrganizationsServiceClient, h.usersAddress, { defaultDeadlineMs: 5_000 });
});
after(async () => {
  organizations.close();
  await Promise.all([feedA.close(), feedB.close(), feedC.close()]);
  for (const c of clients) c.disconnect();
  await proxy.close();
  await h.close();
});

const personToken = (userId: string, scope: string) =>
  h.signWithRealKey({ user_id: userId, scope, sub: `sub-${userId}-${scope}` });
const scimGet = (app: Express, token: string) =>
  request(app).get('/scim/v2/Users?count=1').set('Authorization', `Bearer ${token}`);
const statuses = async (token: string) => [(await scimGet(a, token)).status, (await scimGet(b, token)).status];

async function mint(name: string): Promise<{ id: string; token: string }> {
  const res = await request(a)
    .post('/v1/organization/scim-tokens')
    .set('Authorization', `Bearer ${await personToken(GLOBEX.erin, 'organization_manage')}`)
    .send({ name });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; token: string };
}

const revokeThroughA = async (id: string) =>
  request(a)
    .delete(`/v1/organization/scim-tokens/${id}`)
    .set('Authorization', `Bearer ${await personToken(GLOBEX.erin, 'organization_manage')}`)
    .expect(204);

/** A revocation no replica hears of (straight at the Users service): only the caches' bound or a lookup finds it. */
const revokeBehindTheirBack = (id: string) =>
  organizations.revokeScimToken({ id, actor: 'test', requestId: randomUUID() }, { organizationId: h.globexId });

describe('a revoked SCIM secret token', () => {
  test('is refused by both replicas on the first request after the 204, though both had it cached', async () => {
    const atAandC = async (token: string) => [(await scimGet(a, token)).status, (await scimGet(c, token)).status];
    const cached = await mint('cached everywhere');
    assert.deepEqual(await atAandC(cached.token), [200, 200]);
    // Both replicas serve it from their cache: a revocation nobody announces is not seen (within 30 s).
    const unannounced = await mint('revoked unannounced');
    assert.deepEqual(await atAandC(unannounced.token), [200, 200]);
    await revokeBehindTheirBack(unannounced.id);
    assert.deepEqual(await atAandC(unannounced.token), [200, 200], 'still cached: the cache is what is tested');

    await revokeThroughA(cached.id);
    assert.equal((await scimGet(c, cached.token)).status, 401, 'replica C, at once');
    assert.equal((await scimGet(a, cached.token)).status, 401, 'replica A, at once');
  });

  test('while a replica is not subscribed it asks the Users service on every request', async () => {
    const token = await mint('subscription cut');
    assert.deepEqual(await statuses(token.token), [200, 200]);
    await proxy.stop();
    await waitFor(() => !feedB.listening(), { what: "B's subscription seen down" });
    assert.equal((await scimGet(b, token.token)).status, 200);
    await revokeBehindTheirBack(token.id);
    assert.equal((await scimGet(b, token.token)).status, 401, 'B asked the Users service');
    assert.equal((await scimGet(a, token.token)).status, 200, 'A, subscribed, still trusts its cache');
    await proxy.resume();
    await waitFor(() => feedB.listening(), { what: "B's subscription back" });
    // Subscribed again, B caches again and hears A's revocations.
    const next = await mint('after the cut');
    assert.deepEqual(await statuses(next.token), [200, 200]);
    // B's acknowledgement comes back through the proxy before A's 204.
    await revokeThroughA(next.id);
    assert.deepEqual(await statuses(next.token), [401, 401]);
  });

  test('a subscriber that never acknowledges delays the 204 only until the timeout', async () => {
    const silent = new Redis(testRedisUrl());
    clients.push(silent);
    await silent.subscribe(channel);
    const token = await mint('silent subscriber');
    const started = process.hrtime.bigint();
    await revokeThroughA(token.id);
    const waitedMs = Number(process.hrtime.bigint() - started) / 1e6;
    assert.ok(waitedMs >= ACKNOWLEDGEMENT_TIMEOUT_MS, `waited ${waitedMs} ms for the missing acknowledgement`);
    assert.deepEqual(await statuses(token.token), [401, 401]);
    silent.disconnect();
  });

  test('a frozen Redis (connections open, nothing answered) is found by the heartbeat: B stops trusting', async () => {
    const token = await mint('frozen redis');
    assert.deepEqual(await statuses(token.token), [200, 200]);
    proxy.freeze();
    await waitFor(() => !feedB.listening(), { what: "B's heartbeat failed" });
    await revokeBehindTheirBack(token.id);
    assert.equal((await scimGet(b, token.token)).status, 401);
    await proxy.resume();
    await waitFor(() => feedB.listening(), { what: "B's subscription back" });
  });
});

describe('accounts are read on every request', () => {
  test('a user deactivated by SCIM is refused by both replicas on the next request', async () => {
    const { token } = await mint('deactivation');
    const frank = await personToken(GLOBEX.frank, 'users_read');
    const me = (app: Express) => request(app).get('/v1/users/me').set('Authorization', `Bearer ${frank}`);
    assert.deepEqual([(await me(a)).status, (await me(b)).status], [200, 200]);
    const patched = await request(a)
      .patch(`/scim/v2/Users/${GLOBEX.frank}`)
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/scim+json')
      .send({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual([(await me(b)).status, (await me(a)).status], [403, 403]);
  });

  test('an organization admin demoted is refused the admin routes by both replicas on the next request', async () => {
    const erin = await personToken(GLOBEX.erin, 'organization_manage');
    const list = (app: Express) =>
      request(app).get('/v1/organization/scim-tokens').set('Authorization', `Bearer ${erin}`);
    assert.deepEqual([(await list(a)).status, (await list(b)).status], [200, 200]);
    await organizations.setOrganizationAdmin(
      { userId: GLOBEX.erin, organizationAdmin: false },
      { organizationId: h.globexId },
    );
    assert.deepEqual([(await list(b)).status, (await list(a)).status], [403, 403]);
    await organizations.setOrganizationAdmin(
      { userId: GLOBEX.erin, organizationAdmin: true },
      { organizationId: h.globexId },
    );
    assert.deepEqual([(await list(b)).status, (await list(a)).status], [200, 200], 'and promoted again');
  });
});

describe('one gateway without Redis', () => {
  test('its own revocation is enough: refused on the next request despite a 30 s cache', async () => {
    const alone = h.app({ scimTokenCacheSeconds: CACHE_SECONDS });
    const { id, token } = await mint('alone');
    assert.equal((await scimGet(alone, token)).status, 200);
    await request(alone)
      .delete(`/v1/organization/scim-tokens/${id}`)
      .set('Authorization', `Bearer ${await personToken(GLOBEX.erin, 'organization_manage')}`)
      .expect(204);
    assert.equal((await scimGet(alone, token)).status, 401);
  });
});
