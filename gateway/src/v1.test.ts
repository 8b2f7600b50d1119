// /v1 acts inside the caller's organization: the caller's account is read without one (user ids are global; the
// answer names the organization), and every call the route makes afterwards carries it.
import type { usersV1 } from '@mileage/proto';
import type { CallSettings, PromiseClient } from '@mileage/runtime/grpc';
import express from 'express';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import request from 'supertest';
import { AccountLoader } from './account-loader';
import { TokenVerifier } from './auth';
import { CursorCodec } from './cursor';
import { RateLimits } from './rate-limit';
import { TEST_ISSUER, TEST_VERIFIER_OPTIONS } from './verifier.fixture';
import { v1Route, type RouteSpec, type V1Deps } from './v1';

test("every call after the caller's account carries the account's organization", async () => {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const token = (userId: string) =>
    new SignJWT({ scope: 'users_read', user_id: userId, typ: 'Bearer', azp: 'mileage-dev' })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'JWT' })
      .setIssuer(TEST_ISSUER)
      .setAudience('mileage-api')
      .setSubject(`sub-${userId}`)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
  const accountReads: { ids: string[]; call: CallSettings | undefined }[] = [];
  const organizationOf: Record<string, number> = { ErinAdmin1: 2, AliceAdm01: 1 };
  const users = {
    batchGetUsers: async ({ ids }: usersV1.BatchGetUsersRequest, call?: CallSettings) => {
      accountReads.push({ ids, call });
      return {
        users: ids.map((id) => ({
          id,
          active: true,
          organizationId: organizationOf[id] ?? 0,
          organizationSuspended: id === 'Offboard01',
        })),
      };
    },
  } as unknown as PromiseClient<usersV1.UsersServiceClient>;
  const seen: { user: string; organizationId: number | undefined }[] = [];
  const spec: RouteSpec<null> = {
    id: 'test.route',
    method: 'get',
    path: '/v1/test',
    scope: 'users_read',
    perMinute: 100,
    parameters: [],
    response: 'UserSchema',
    validate: () => ({ input: null }),
    handle: async (_input, account, _deps, call) => {
      seen.push({ user: account.user.id, organizationId: call.organizationId });
      return {};
    },
  };
  const deps = {
    verifier: new TokenVerifier({ ...TEST_VERIFIER_OPTIONS, jwks: createLocalJWKSet({ keys: [jwk] }) }),
    rateLimits: new RateLimits({}),
    users,
    accounts: new AccountLoader(users),
    cursors: new CursorCodec(),
  } as unknown as V1Deps;
  const app = express().get('/v1/test', v1Route(spec, deps));
  // Both in one turn of the event loop: their account reads are made together, each without an organization.
  await Promise.all(
    ['ErinAdmin1', 'AliceAdm01'].map(async (id) =>
      request(app)
        .get('/v1/test')
        .set('Authorization', `Bearer ${await token(id)}`)
        .expect(200),
    ),
  );
  assert.deepEqual(
    seen.sort((a, b) => a.user.localeCompare(b.user)),
    [
      { user: 'AliceAdm01', organizationId: 1 },
      { user: 'ErinAdmin1', organizationId: 2 },
    ],
  );
  assert.deepEqual(accountReads.flatMap((r) => r.ids).sort(), ['AliceAdm01', 'ErinAdmin1']);
  assert.ok(accountReads.every((r) => r.call?.organizationId === undefined));
  const orphan = await request(app)
    .get('/v1/test')
    .set('Authorization', `Bearer ${await token('Orphan0001')}`);
  assert.equal(orphan.status, 403, 'an account without an organization cannot be acted for');
  // An organization being offboarded: its people's tokens are refused as invalid, the route never runs.
  organizationOf.Offboard01 = 3;
  const suspended = await request(app)
    .get('/v1/test')
    .set('Authorization', `Bearer ${await token('Offboard01')}`);
  assert.equal(suspended.status, 401);
  assert.match(String(suspended.headers['www-authenticate']), /error="invalid_token"/);
  assert.equal(
    seen.some((s) => s.user === 'Offboard01'),
    false,
  );
});
