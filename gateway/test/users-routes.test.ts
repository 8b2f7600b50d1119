import { PROTO_FILES, usersV1 } from '@mileage/proto';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import { freePort } from '@mileage/runtime/config';
import { startGrpcServer, type Handlers } from '@mileage/runtime/grpc';
import { testRedisUrl, waitFor } from '@mileage/runtime/testing';
import { Redis } from 'ioredis';
import { generateKeyPair, SignJWT } from 'jose';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { ALL_V1_SCOPES, startHarness, type Harness } from './harness';

let h: Harness;
let alice: string;

before(async () => {
  h = await startHarness();
  alice = await h.token('alice@example.com', ALL_V1_SCOPES);
});
after(() => h.close());

const problemShape = (body: Record<string, unknown>, status: number) => {
  assert.equal(body.status, status);
  assert.equal(typeof body.detail, 'string');
  assert.equal(typeof body.title, 'string');
  assert.equal(body.type, 'about:blank');
  assert.doesNotMatch(JSON.stringify(body), /at \w+ \(|node_modules|SELECT|grpc/i);
};

describe('GET /v1/users/me and /v1/users/{user_id}', () => {
  test('returns the caller as UserSchema with rate-limit headers and a request id', async () => {
    const res = await request(h.app()).get('/v1/users/me').set('Authorization', `Bearer ${alice}`).expect(200);
    assert.match(res.headers['content-type']!, /^application\/json/);
    assert.deepEqual(res.body, {
      id: 'AliceAdm01',
      userName: 'alice@example.com',
      name: { givenName: 'Alice', familyName: 'Admin', formatted: null },
      emails: [{ value: 'alice@example.com', type: 'work', primary: true }],
      active: true,
      displayName: null,
    });
    assert.equal(res.headers['x-ratelimit-limit'], '30');
    assert.equal(res.headers['x-ratelimit-remaining'], '29');
    assert.ok(Number(res.headers['x-ratelimit-reset']) > Date.now() / 1000);
    assert.equal(res.headers['ratelimit-policy'], '"per-minute";q=30;w=60');
    assert.match(res.headers['ratelimit']!, /^"per-minute";r=29;t=\d+$/);
    assert.match(res.headers['x-request-id']!, /^[0-9a-f-]{36}$/);
  });

  test('the caller may read their own id, not another user', async () => {
    const app = h.app();
    const own = await request(app).get('/v1/users/AliceAdm01').set('Authorization', `Bearer ${alice}`).expect(200);
    assert.equal(own.body.id, 'AliceAdm01');
    const other = await request(app).get('/v1/users/BobDriver1').set('Authorization', `Bearer ${alice}`).expect(403);
    problemShape(other.body, 403);
    assert.equal(other.headers['www-authenticate'], undefined);
  });

  test('a malformed user id is 422 in the HTTPValidationError shape', async () => {
    const res = await request(h.app()).get('/v1/users/short').set('Authorization', `Bearer ${alice}`).expect(422);
    assert.deepEqual(res.body.detail[0].loc, ['path', 'user_id']);
    assert.equal(typeof res.body.detail[0].msg, 'string');
    assert.equal(res.body.detail[0].type, 'string_pattern_mismatch');
    await request(h.app()).get('/v1/users/AliceAdm01!').set('Authorization', `Bearer ${alice}`).expect(422);
  });

  test('an unknown id of the right shape is someone else: 403 before any existence check', async () => {
    await request(h.app()).get('/v1/users/Nobody0000').set('Authorization', `Bearer ${alice}`).expect(403);
  });

  test('a missing scope is 403 with insufficient_scope', async () => {
    const token = await h.token('alice@example.com', 'drives_read');
    const res = await request(h.app()).get('/v1/users/me').set('Authorization', `Bearer ${token}`).expect(403);
    assert.equal(
      res.headers['www-authenticate'],
      'Bearer realm="mileage", error="insufficient_scope", scope="users_read"',
    );
    problemShape(res.body, 403);
  });

  test('inactive and unknown accounts are refused', async () => {
    const inactive = await h.token('ivan@example.com', 'users_read');
    await request(h.app()).get('/v1/users/me').set('Authorization', `Bearer ${inactive}`).expect(403);
    await request(h.app()).get('/v1/users/Inactive01').set('Authorization', `Bearer ${inactive}`).expect(403);
    const ghost = await h.token('ghost@example.com', 'users_read');
    await request(h.app()).get('/v1/users/me').set('Authorization', `Bearer ${ghost}`).expect(403);
  });

  test('a token without user_id (client credentials) is refused with 403', async () => {
    const token = await h.signWithRealKey({ scope: 'users_read', azp: 'mileage-scim' });
    const res = await request(h.app()).get('/v1/users/me').set('Authorization', `Bearer ${token}`).expect(403);
    assert.equal(res.headers['www-authenticate'], undefined);
    const cc = await fetch(h.tokenEndpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('mileage-scim:test-scim-secret').toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'scim' }),
    });
    const { access_token } = (await cc.json()) as { access_token: string };
    const scim = await request(h.app()).get('/v1/users/me').set('Authorization', `Bearer ${access_token}`).expect(403);
    assert.match(scim.headers['www-authenticate']!, /insufficient_scope/);
  });
});

describe('authentication failures are 401', () => {
  const expect401 = async (authorization: string | undefined, tokenSent: boolean) => {
    const req = request(h.app()).get('/v1/users/me');
    if (authorization !== undefined) req.set('Authorization', authorization);
    const res = await req.expect(401);
    problemShape(res.body, 401);
    if (tokenSent) assert.match(res.headers['www-authenticate']!, /^Bearer realm="mileage", error="invalid_token"/);
    else assert.equal(res.headers['www-authenticate'], 'Bearer realm="mileage"');
    assert.equal(res.headers['x-ratelimit-limit'], undefined, 'no rate-limit accounting before authentication');
  };

  test('missing, non-Bearer and malformed credentials', async () => {
    await expect401(undefined, false);
    await expect401('Basic YWxpY2U6ZGVtbw==', false);
    await expect401('Bearer', true);
    await expect401('Bearer not a token', true);
    await expect401('Bearer abc.def.ghi', true);
  });

  test('a token with alg "none"', async () => {
    const [, payload] = alice.split('.');
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    await expect401(`Bearer ${header}.${payload}.`, true);
  });

  test('a token signed with HMAC using the public key as the secret', async () => {
    const jwk = h.realKey();
    const publicJwk = { kty: jwk.kty, n: jwk.n, e: jwk.e };
    const secret = new TextEncoder().encode(JSON.stringify(publicJwk));
    const forged = await new SignJWT({ user_id: 'AliceAdm01', scope: 'users_read', typ: 'Bearer' })
      .setProtectedHeader({ alg: 'HS256', kid: jwk.kid! })
      .setIssuer(h.issuer)
      .setAudience('mileage-api')
      .setSubject('x')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(secret);
    await expect401(`Bearer ${forged}`, true);
  });

  test('a token signed by a foreign key, even one claiming the real kid', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    for (const kid of [h.realKey().kid!, 'foreign-key']) {
      const forged = await new SignJWT({ user_id: 'AliceAdm01', scope: 'users_read', typ: 'Bearer' })
        .setProtectedHeader({ alg: 'RS256', kid })
        .setIssuer(h.issuer)
        .setAudience('mileage-api')
        .setSubject('x')
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
      await expect401(`Bearer ${forged}`, true);
    }
  });

  test('a real token whose claims were tampered with', async () => {
    const [header, payload, signature] = alice.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
    claims.user_id = 'BobDriver1';
    const tampered = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
    await expect401(`Bearer ${tampered}`, true);
  });

  test('expired, wrong issuer, wrong audience, and ID tokens signed with the real key', async () => {
    const base = { user_id: 'AliceAdm01', scope: 'users_read' };
    await expect401(
      `Bearer ${await h.signWithRealKey(base, { expiresIn: Math.floor(Date.now() / 1000) - 120 })}`,
      true,
    );
    await expect401(`Bearer ${await h.signWithRealKey({ ...base, iss: 'http://127.0.0.1:1/realms/mileage' })}`, true);
    await expect401(`Bearer ${await h.signWithRealKey({ ...base, aud: 'account' })}`, true);
    await expect401(`Bearer ${await h.signWithRealKey({ ...base, typ: 'ID' })}`, true);
    // The same key and claims with a valid shape are accepted: the refusals above are about the claims.
    const good = await h.signWithRealKey(base);
    await request(h.app()).get('/v1/users/me').set('Authorization', `Bearer ${good}`).expect(200);
  });
});

describe('check order and limits', () => {
  test('the rate limit counts before the scope check; 429 carries Retry-After and the limit headers', async () => {
    const app = h.app();
    const noScope = await h.token('bob@example.com', 'drives_read');
    for (let i = 0; i < 30; i++)
      await request(app).get('/v1/users/me').set('Authorization', `Bearer ${noScope}`).expect(403);
    const res = await request(app).get('/v1/users/me').set('Authorization', `Bearer ${noScope}`).expect(429);
    problemShape(res.body, 429);
    assert.ok(Number(res.headers['retry-after']) >= 1 && Number(res.headers['retry-after']) <= 60);
    assert.equal(res.headers['x-ratelimit-remaining'], '0');
    assert.match(res.headers['ratelimit']!, /^"per-minute";r=0;t=\d+$/);
    // The other route of the same caller has its own window.
    await request(app).get('/v1/users/BobDriver1').set('Authorization', `Bearer ${noScope}`).expect(403);
  });

  test('scope is checked before validation, validation before ownership', async () => {
    const noScope = await h.token('alice@example.com', 'groups_read');
    await request(h.app()).get('/v1/users/bad').set('Authorization', `Bearer ${noScope}`).expect(403);
    await request(h.app()).get('/v1/users/bad').set('Authorization', `Bearer ${alice}`).expect(422);
  });

  test('two gateway replicas sharing one Redis share one limit', async () => {
    const redisA = new Redis(testRedisUrl());
    const redisB = new Redis(testRedisUrl());
    try {
      await Promise.all([redisA.ping(), redisB.ping()]);
      const prefix = `it:${randomUUID()}`;
      const replicaA = h.app({ redis: redisA, rateLimitPrefix: prefix });
      const replicaB = h.app({ redis: redisB, rateLimitPrefix: prefix });
      const token = await h.token('bob@example.com', 'users_read');
      for (let i = 0; i < 30; i++) {
        await request(i % 2 ? replicaA : replicaB)
          .get('/v1/users/me')
          .set('Authorization', `Bearer ${token}`)
          .expect(200);
      }
      await request(replicaA).get('/v1/users/me').set('Authorization', `Bearer ${token}`).expect(429);
      await request(replicaB).get('/v1/users/me').set('Authorization', `Bearer ${token}`).expect(429);
    } finally {
      redisA.disconnect();
      redisB.disconnect();
    }
  });
});

describe('downstream failures', () => {
  test(
    'a Users service that is down answers 503 with Retry-After, logged with its gRPC code; the gateway stays ready and reports it',
    { timeout: 15_000 },
    async () => {
      const port = await freePort(); // nothing listens there
      const lines: Record<string, unknown>[] = [];
      const logger = createLogger({
        service: 'gateway',
        destination: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
      });
      const app = h.app({ usersAddress: `127.0.0.1:${port}`, deadlineMs: 60_000, logger });
      const res = await request(app).get('/v1/users/me').set('Authorization', `Bearer ${alice}`).expect(503);
      problemShape(res.body, 503);
      assert.equal(res.headers['retry-after'], '5');
      // The caller's account could not be read: the operator sees why, under the request's id.
      const failure = lines.find((l) => l.msg === 'downstream unavailable');
      assert.equal(failure?.level, 'warn');
      assert.equal(failure?.grpc_code, 'UNAVAILABLE');
      assert.equal(failure?.request_id, res.headers['x-request-id']);
      await request(app).get('/v1/users/me').expect(401); // no token: judged without the service
      await waitFor(async () => (await request(app).get('/healthz/dependencies')).body.status === 'degraded');
      const report = (await request(app).get('/healthz/dependencies').expect(200)).body;
      assert.equal(report.dependencies.users.up, false);
      assert.equal(report.dependencies.groups.up, true);
      const ready = await request(app).get('/readyz').expect(200);
      assert.deepEqual(ready.body.checks, { signing_keys: true, accepting: true });
      // Known down: answered at once, not after the (here 60 s) deadline.
      await request(app).get('/v1/users/me').set('Authorization', `Bearer ${alice}`).expect(503);
    },
  );

  test('a Users service that does not answer in time gives 504 at the deadline', { timeout: 15_000 }, async () => {
    let release!: () => void;
    const stuck = new Promise<void>((resolve) => (release = resolve));
    // The caller's account is the first read: it never answers.
    const never = async () => {
      await stuck;
      return {};
    };
    const handlers: Handlers<usersV1.UsersServiceServer> = {
      getUser: never,
      batchGetUsers: never as never,
      listProvisioningEvents: async () => ({ events: [], hasMore: false }),
      createUser: async () => ({}),
      updateUser: async () => ({}),
      deleteUser: async () => ({}),
      listUsers: async () => ({ users: [], totalSize: 0 }),
      batchFindUsersByUserName: async () => ({ matches: [] }),
    };
    const slow = await startGrpcServer({
      address: '127.0.0.1:0',
      services: [{ definition: usersV1.UsersServiceService, handlers: handlers as never }],
      protoFiles: [PROTO_FILES.users],
      logger: createLogger({ service: 'slow', level: 'silent' }),
      metrics: new Metrics('slow'),
    });
    try {
      const app = h.app({ usersAddress: `127.0.0.1:${slow.port}`, deadlineMs: 300 });
      const res = await request(app).get('/v1/users/me').set('Authorization', `Bearer ${alice}`).expect(504);
      problemShape(res.body, 504);
    } finally {
      release();
      await slow.shutdown(1_000);
    }
  });
});

describe('edges', () => {
  test('X-Request-Id is echoed when acceptable and replaced otherwise', async () => {
    const app = h.app();
    const echoed = await request(app).get('/v1/users/me').set('X-Request-Id', 'abc-123.DEF').expect(401);
    assert.equal(echoed.headers['x-request-id'], 'abc-123.DEF');
    const replaced = await request(app).get('/v1/users/me').set('X-Request-Id', 'bad id\twith spaces').expect(401);
    assert.match(replaced.headers['x-request-id']!, /^[0-9a-f-]{36}$/);
  });

  test('unknown paths are 404, other methods 405 with Allow, oversized bodies 413', async () => {
    const app = h.app();
    problemShape((await request(app).get('/v1/nothing').expect(404)).body, 404);
    const m = await request(app).post('/v1/users/me').set('Authorization', `Bearer ${alice}`).expect(405);
    assert.equal(m.headers.allow, 'GET, HEAD');
    await request(app)
      .post('/v1/users/me')
      .set('Content-Type', 'application/json')
      .send('x'.repeat(1_048_577))
      .expect(413);
  });

  test('/healthz and /readyz', async () => {
    const app = h.app();
    assert.deepEqual((await request(app).get('/healthz').expect(200)).body, { status: 'ok' });
    await request(app).get('/v1/users/me').set('Authorization', `Bearer ${alice}`).expect(200); // keys now loaded
    assert.deepEqual((await request(app).get('/readyz').expect(200)).body, {
      status: 'ready',
      checks: { signing_keys: true, accepting: true },
    });
    const report = (await request(app).get('/healthz/dependencies').expect(200)).body;
    assert.deepEqual(Object.keys(report.dependencies).sort(), ['drives', 'groups', 'scim', 'users', 'webhooks']);
  });
});
