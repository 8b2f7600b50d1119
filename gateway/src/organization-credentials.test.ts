import { status as grpcStatus } from '@grpc/grpc-js';
import type { scimV1, usersV1 } from '@mileage/proto';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import { verifyActorAttestation, type PromiseClient } from '@mileage/runtime/grpc';
import express from 'express';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import request from 'supertest';
import { TokenVerifier, type Caller } from './auth';
import { namedOrganization } from './organization-claim';
import { OrganizationCredentials, parseClientOrganizations, secretTokenCaller } from './organization-credentials';
import { RateLimits } from './rate-limit';
import type { RevocationFeed } from './scim-token-revocations';
import { scimRoute, type ScimRouteDeps } from './routes/scim';
import { TEST_ISSUER, TEST_VERIFIER_OPTIONS } from './verifier.fixture';

const ORGANIZATIONS = [
  { id: 1, alias: 'demo', name: 'Demo Org' },
  { id: 2, alias: 'globex', name: 'Globex' },
];
/** Secrets of the right shape: 43 base64url characters after the prefix. */
const secret = (c: string) => `mscim_${c.repeat(43)}`;
const ACTIVE = secret('a');
const EXPIRING = secret('e');

const notFound = () => Object.assign(new Error('not found'), { code: grpcStatus.NOT_FOUND });

/** The Users process's OrganizationsService as far as the gateway asks it, counting its calls. */
function fakeOrganizations(clock: { now: number }) {
  const calls = { getOrganization: 0, resolveScimToken: 0, getOffboarding: 0 };
  /** The organizations being offboarded (suspended). */
  const offboarded = new Set<number>();
  /** The call settings of every lookup: they must carry no organization. */
  const settings: unknown[] = [];
  const tokens = new Map<string, usersV1.ScimToken>([
    [ACTIVE, { id: 'tok-active', name: 'Entra', organizationId: 2 }],
    [
      EXPIRING,
      {
        id: 'tok-expiring',
        name: 'Okta',
        organizationId: 1,
        expireTime: { seconds: Math.floor(clock.now / 1000) + 2, nanos: 0 },
      },
    ],
  ]);
  const byHash = () => new Map([...tokens].map(([s, t]) => [createHash('sha256').update(s).digest('base64url'), t]));
  const client = {
    getOrganization: async ({ key }: usersV1.GetOrganizationRequest, call: unknown) => {
      calls.getOrganization++;
      settings.push(call);
      const organization = ORGANIZATIONS.find((o) => (key?.$case === 'id' ? o.id : o.alias) === key?.value);
      if (!organization) throw notFound();
      return { organization };
    },
    getOffboarding: async ({ organizationId }: usersV1.GetOffboardingRequest) => {
      calls.getOffboarding++;
      if (!offboarded.has(organizationId)) throw notFound();
      return { offboarding: { organizationId, erasedRows: {} } };
    },
    resolveScimToken: async ({ secretSha256 }: usersV1.ResolveScimTokenRequest, call: unknown) => {
      calls.resolveScimToken++;
      settings.push(call);
      const token = byHash().get(Buffer.from(secretSha256).toString('base64url'));
      if (!token) throw notFound();
      return { token };
    },
  } as unknown as PromiseClient<usersV1.OrganizationsServiceClient>;
  return { client, calls, settings, offboarded, revoke: (s: string) => tokens.delete(s) };
}

/** A revocation feed whose subscription a test turns on and off. */
class FakeFeed implements RevocationFeed {
  private listeners: ((tokenId: string | undefined) => void)[] = [];
  private on = true;
  listening = () => this.on;
  subscribe(listener: (tokenId: string | undefined) => void) {
    this.listeners.push(listener);
  }
  setListening(on: boolean) {
    this.on = on;
    for (const l of this.listeners) l(undefined);
  }
  async announce(tokenId: string) {
    for (const l of this.listeners) l(tokenId);
  }
  async close() {}
}

function setup(options: { bindings?: string; tokenCacheSeconds?: number; revocations?: RevocationFeed } = {}) {
  const clock = { now: Date.parse('2026-11-25T12:00:00Z') };
  const organizations = fakeOrganizations(clock);
  const credentials = new OrganizationCredentials({
    organizations: organizations.client,
    clientOrganizations: parseClientOrganizations(options.bindings ?? 'mileage-scim=demo'),
    ...(options.tokenCacheSeconds !== undefined ? { tokenCacheSeconds: options.tokenCacheSeconds } : {}),
    ...(options.revocations ? { revocations: options.revocations } : {}),
    now: () => clock.now,
  });
  return { clock, credentials, ...organizations };
}

const jwtCaller = (claims: Record<string, unknown>, clientId = 'some-client'): Caller => {
  const organization = namedOrganization(claims, 'org_id');
  return {
    subject: 'service-account',
    clientId,
    scopes: new Set(['scim']),
    expiresAt: 0,
    ...(organization ? { organization } : {}),
  };
};

describe('the organization a token names', () => {
  test('the configured claim, by id or alias; a number is an id', () => {
    assert.deepEqual(namedOrganization({ org_id: 'globex' }, 'org_id'), { reference: 'globex' });
    assert.deepEqual(namedOrganization({ org_id: '2' }, 'org_id'), { reference: '2' });
    assert.deepEqual(namedOrganization({ org_id: 2 }, 'org_id'), { reference: '2' });
    assert.deepEqual(namedOrganization({ tenant: 'globex' }, 'tenant'), { reference: 'globex' });
  });

  test("Keycloak's organization claim: a list of one alias or an object with one alias key", () => {
    assert.deepEqual(namedOrganization({ organization: ['globex'] }, 'org_id'), { reference: 'globex' });
    assert.deepEqual(namedOrganization({ organization: { globex: { id: 'a1b2' } } }, 'org_id'), {
      reference: 'globex',
    });
    // The configured claim wins over Keycloak's.
    assert.deepEqual(namedOrganization({ org_id: 'demo', organization: ['globex'] }, 'org_id'), {
      reference: 'demo',
    });
  });

  test('a claim that names no single organization is unusable (never a fallback); no claim names none', () => {
    for (const claims of [
      { organization: ['demo', 'globex'] },
      { organization: {} },
      { organization: [] },
      { organization: 'globex' },
      { org_id: ['globex'] },
      { org_id: '' },
      { org_id: 'Not An Alias' },
      { org_id: true },
      // Keycloak's claim holds aliases, and an alias has a letter: digits there name no organization (not the id).
      { organization: ['2'] },
      { organization: { '2': { id: 'a1b2' } } },
      { org_id: '007' },
    ])
      assert.deepEqual(namedOrganization(claims, 'org_id'), { unusable: true }, JSON.stringify(claims));
    assert.equal(namedOrganization({ sub: 'x' }, 'org_id'), undefined);
  });
});

describe('SCIM_CLIENT_ORGANIZATIONS', () => {
  test('client=organization pairs by id or alias', () => {
    assert.deepEqual(
      [...parseClientOrganizations(' mileage-scim=demo , okta:prod = 2 ,')],
      [
        ['mileage-scim', 'demo'],
        ['okta:prod', '2'],
      ],
    );
    assert.deepEqual([...parseClientOrganizations('')], []);
  });

  test('a malformed pair or a client bound twice is refused', () => {
    assert.throws(() => parseClientOrganizations('mileage-scim'), /client=organization/);
    assert.throws(() => parseClientOrganizations('mileage-scim=Demo Org'), /client=organization/);
    // Neither an id (leading zero) nor an alias (no letter).
    assert.throws(() => parseClientOrganizations('mileage-scim=007'), /at least one of them a letter/);
    assert.throws(() => parseClientOrganizations('a=demo,a=globex'), /bound twice/);
  });
});

describe('OrganizationCredentials.organizationOf', () => {
  const call = { requestId: 'r1', organizationId: 99 };

  test('the claim by alias or id; a binding for a client without a claim; none, unknown or unusable: undefined', async () => {
    const { credentials } = setup();
    assert.equal(await credentials.organizationOf(jwtCaller({ org_id: 'globex' }), call), 2);
    assert.equal(await credentials.organizationOf(jwtCaller({ org_id: '2' }), call), 2);
    assert.equal(await credentials.organizationOf(jwtCaller({ organization: { globex: {} } }), call), 2);
    assert.equal(await credentials.organizationOf(jwtCaller({}, 'mileage-scim'), call), 1);
    assert.equal(await credentials.organizationOf(jwtCaller({}), call), undefined, 'no claim, no binding');
    assert.equal(await credentials.organizationOf(jwtCaller({ org_id: 'initech' }), call), undefined, 'unknown');
    assert.equal(await credentials.organizationOf(jwtCaller({ org_id: '7' }), call), undefined, 'unknown id');
    assert.equal(
      await credentials.organizationOf(jwtCaller({ organization: ['demo', 'globex'] }, 'mileage-scim'), call),
      undefined,
      'an unusable claim does not fall back to the binding',
    );
  });

  test('a binding to an organization that does not exist names none', async () => {
    const { credentials } = setup({ bindings: 'mileage-scim=initech' });
    assert.equal(await credentials.organizationOf(jwtCaller({}, 'mileage-scim'), call), undefined);
  });

  test('organizations are looked up once while cached, and without an organization context', async () => {
    const { credentials, calls, clock, settings } = setup();
    await Promise.all([1, 2, 3].map(() => credentials.organizationOf(jwtCaller({ org_id: 'globex' }), call)));
    assert.equal(calls.getOrganization, 1, 'concurrent lookups share one call');
    assert.deepEqual(settings, [{ requestId: 'r1' }]);
    clock.now += 60_000;
    await credentials.organizationOf(jwtCaller({ org_id: 'globex' }), call);
    assert.equal(calls.getOrganization, 2, 'asked again once the entry is old');
  });

  test("an OAuth client's organization being offboarded names none: at once when announced, asked when not listening", async () => {
    const feed = new FakeFeed();
    const { credentials, calls, offboarded } = setup({ revocations: feed });
    const caller = jwtCaller({ org_id: 'globex' });
    assert.equal(await credentials.organizationOf(caller, call), 2);
    assert.equal(await credentials.organizationOf(caller, call), 2);
    assert.equal(calls.getOffboarding, 1, 'kept while the replica hears the channel');
    offboarded.add(2);
    await feed.announce('organization:2');
    assert.equal(await credentials.organizationOf(caller, call), undefined, 'suspended: the next request');
    offboarded.delete(2);
    await feed.announce('organization:2');
    assert.equal(await credentials.organizationOf(caller, call), 2, 'cancelled');
    feed.setListening(false);
    offboarded.add(2);
    assert.equal(await credentials.organizationOf(caller, call), undefined, 'not listening: asked every time');
  });

  test("a secret token's organization needs no lookup", async () => {
    const { credentials, calls } = setup();
    const caller = secretTokenCaller({ tokenId: 't', organizationId: 2, expiresAt: undefined });
    assert.equal(await credentials.organizationOf(caller, call), 2);
    assert.equal(calls.getOrganization, 0);
  });
});

describe('OrganizationCredentials.resolveSecretToken', () => {
  const call = { requestId: 'r1' };

  test('malformed secrets are refused without a lookup; unknown ones after one', async () => {
    const { credentials, calls } = setup();
    for (const malformed of [
      'mscim_short',
      `${ACTIVE}x`,
      ACTIVE.replace('mscim_', 'mscim-'),
      `${ACTIVE.slice(0, -1)}!`,
    ])
      assert.equal(await credentials.resolveSecretToken(malformed, call), undefined, malformed);
    assert.equal(calls.resolveScimToken, 0);
    assert.equal(await credentials.resolveSecretToken(secret('u'), call), undefined);
    assert.equal(calls.resolveScimToken, 1);
  });

  test('an active token resolves to its id and organization', async () => {
    const { credentials } = setup();
    assert.deepEqual(await credentials.resolveSecretToken(ACTIVE, call), {
      tokenId: 'tok-active',
      organizationId: 2,
      expiresAt: undefined,
    });
  });

  test('a revocation is forgotten at once; one never announced is seen within the cache bound (5 s)', async () => {
    const { credentials, calls, revoke } = setup();
    assert.ok(await credentials.resolveSecretToken(ACTIVE, call));
    assert.ok(await credentials.resolveSecretToken(EXPIRING, call));
    revoke(ACTIVE);
    await credentials.revoked('tok-active');
    assert.equal(await credentials.resolveSecretToken(ACTIVE, call), undefined, 'refused on the next request');
    assert.ok(await credentials.resolveSecretToken(EXPIRING, call), 'other tokens stay cached');
    assert.equal(calls.resolveScimToken, 3);
    // Revoked where this replica never heard of it (an announcement lost): the cache bound.
    const { credentials: other, calls: otherCalls, clock: otherClock, revoke: otherRevoke } = setup();
    assert.ok(await other.resolveSecretToken(ACTIVE, call));
    otherRevoke(ACTIVE);
    otherClock.now += 4_999;
    assert.ok(await other.resolveSecretToken(ACTIVE, call), 'still cached');
    otherClock.now += 1;
    assert.equal(await other.resolveSecretToken(ACTIVE, call), undefined, 'refused after 5 s');
    assert.equal(otherCalls.resolveScimToken, 2);
  });

  test('a lookup in flight when a revocation arrives is neither kept nor joined by later requests', async () => {
    const { credentials, calls, revoke } = setup();
    const before = credentials.resolveSecretToken(ACTIVE, call); // answered "active" by the fake before the revocation
    revoke(ACTIVE);
    await credentials.revoked('tok-active');
    const after = credentials.resolveSecretToken(ACTIVE, call);
    assert.ok(await before, 'the request that came before the revocation');
    assert.equal(await after, undefined, 'a request after it asked again');
    assert.equal(await credentials.resolveSecretToken(ACTIVE, call), undefined, 'the early answer was not cached');
    assert.equal(calls.resolveScimToken, 2, 'the later answer (unknown) is what is remembered');
  });

  test('while revocations may be missed, every request asks the Users service, alone', async () => {
    const feed = new FakeFeed();
    const { credentials, calls, revoke } = setup({ revocations: feed });
    assert.ok(await credentials.resolveSecretToken(ACTIVE, call));
    assert.ok(await credentials.resolveSecretToken(ACTIVE, call));
    assert.equal(calls.resolveScimToken, 1, 'cached while listening');
    feed.setListening(false);
    await Promise.all([1, 2, 3].map(() => credentials.resolveSecretToken(ACTIVE, call)));
    assert.equal(calls.resolveScimToken, 4, 'one lookup per request, none shared');
    revoke(ACTIVE); // another replica revoked it; this one heard nothing
    assert.equal(await credentials.resolveSecretToken(ACTIVE, call), undefined, 'refused on the next request');
    // Unknown secrets are still remembered: nothing revoked makes a secret valid.
    await credentials.resolveSecretToken(secret('q'), call);
    await credentials.resolveSecretToken(secret('q'), call);
    assert.equal(calls.resolveScimToken, 6);
    feed.setListening(true);
    assert.ok(await credentials.resolveSecretToken(EXPIRING, call));
    assert.ok(await credentials.resolveSecretToken(EXPIRING, call));
    assert.equal(calls.resolveScimToken, 7, 'cached again once listening');
  });

  test('the bound is configurable up to 30 s; a token past its expiry is refused even while cached', async () => {
    assert.throws(() => setup({ tokenCacheSeconds: 31 }), /0 to 30 seconds/);
    const { credentials, clock, calls } = setup({ tokenCacheSeconds: 30 });
    assert.equal((await credentials.resolveSecretToken(EXPIRING, call))?.organizationId, 1);
    clock.now += 2_000;
    assert.equal(await credentials.resolveSecretToken(EXPIRING, call), undefined, 'expired');
    assert.equal(calls.resolveScimToken, 2, 'the entry lived only until the expiry');
  });

  test('unknown secrets are remembered briefly: a retried wrong secret costs one lookup per 2 s', async () => {
    const { credentials, calls, clock } = setup();
    const unknown = secret('z');
    for (let i = 0; i < 5; i++) await credentials.resolveSecretToken(unknown, call);
    assert.equal(calls.resolveScimToken, 1);
    clock.now += 2_000;
    await credentials.resolveSecretToken(unknown, call);
    assert.equal(calls.resolveScimToken, 2);
  });
});

describe('/scim/v2 credentials', async () => {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const sign = (claims: Record<string, unknown>) =>
    new SignJWT({ scope: 'scim', typ: 'Bearer', azp: 'mileage-scim-globex', ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'JWT' })
      .setIssuer(TEST_ISSUER)
      .setAudience('mileage-api')
      .setSubject('service-account')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
  const ATTESTATION_SECRET = 'unit-test-attestation-secret-0123456789abcdef';

  function app(invalidTokenBurst = 100) {
    const { credentials } = setup();
    const forwarded: { organizationId: number; clientId: string; ok: boolean }[] = [];
    const deps: ScimRouteDeps = {
      verifier: new TokenVerifier({
        ...TEST_VERIFIER_OPTIONS,
        jwks: createLocalJWKSet({ keys: [jwk] }),
        invalidTokenLimit: { burst: invalidTokenBurst, perMinute: 1 },
      }),
      rateLimits: new RateLimits({ keyPrefix: `t${Math.random()}` }),
      credentials,
      scim: {
        handleRequest: async (req: scimV1.HandleRequestRequest, call: { requestId: string }) => {
          const attested = { ...req, actor: req.clientId, requestId: call.requestId };
          const check = verifyActorAttestation([ATTESTATION_SECRET], req.actorAttestation, attested, {
            maxAgeSeconds: 30,
          });
          forwarded.push({ organizationId: req.organizationId, clientId: req.clientId, ok: check.ok });
          return { status: 200, headers: {}, body: Buffer.from('{}') };
        },
      } as never,
      logger: createLogger({ service: 'test', level: 'silent' }),
      metrics: new Metrics('gateway'),
      bodyLimitBytes: 1024,
      deadlineMs: 1_000,
      actorAttestationSecret: ATTESTATION_SECRET,
    };
    const server = express();
    server.use((_req, res, next) => {
      res.locals.requestId = 'req-1';
      next();
    });
    server.use('/scim/v2', scimRoute(deps));
    return { server, forwarded };
  }
  const get = (server: express.Express, token: string) =>
    request(server).get('/scim/v2/Users').set('Authorization', `Bearer ${token}`);

  test('malformed, unknown and organization-less credentials: one and the same 401', async () => {
    const { server, forwarded } = app();
    const answers = [];
    for (const token of ['mscim_short', secret('u'), secret('v'), await sign({}), await sign({ org_id: 'initech' })])
      answers.push(await get(server, token));
    for (const res of answers) {
      assert.equal(res.status, 401);
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="mileage", error="invalid_token"');
      assert.equal(res.text, answers[0]!.text, 'no hint which');
    }
    assert.equal(forwarded.length, 0);
  });

  test('a secret token acts inside its organization as scim_token:<id>, attested', async () => {
    const { server, forwarded } = app();
    const res = await get(server, ACTIVE);
    assert.equal(res.status, 200);
    assert.deepEqual(forwarded, [{ organizationId: 2, clientId: 'scim_token:tok-active', ok: true }]);
  });

  test('a JWT acts inside the organization its claim names', async () => {
    const { server, forwarded } = app();
    assert.equal((await get(server, await sign({ org_id: 'globex' }))).status, 200);
    assert.equal((await get(server, await sign({ organization: ['demo'] }))).status, 200);
    assert.deepEqual(
      forwarded.map((f) => [f.organizationId, f.clientId, f.ok]),
      [
        [2, 'mileage-scim-globex', true],
        [1, 'mileage-scim-globex', true],
      ],
    );
  });

  test('the rate limit is per organization, whichever credential of it', async () => {
    const { server } = app();
    const first = await get(server, ACTIVE);
    const second = await get(server, await sign({ org_id: '2' }));
    const otherOrganization = await get(server, await sign({ org_id: 'demo' }));
    assert.equal(Number(second.headers['x-ratelimit-remaining']), Number(first.headers['x-ratelimit-remaining']) - 1);
    assert.equal(otherOrganization.headers['x-ratelimit-remaining'], first.headers['x-ratelimit-remaining']);
  });

  test('invalid secret tokens count against the address, which still gets its valid ones answered', async () => {
    const { server } = app(2);
    assert.equal((await get(server, secret('u'))).status, 401);
    assert.equal((await get(server, secret('v'))).status, 401);
    const limited = await get(server, secret('w'));
    assert.equal(limited.status, 429, 'the address is over its limit: its refusals are 429s');
    assert.ok(Number(limited.headers['retry-after']) > 0);
    assert.equal((await get(server, 'mscim_junk')).status, 429);
    assert.equal((await get(server, ACTIVE)).status, 200, 'a valid secret token from the same address');
    assert.equal((await get(server, await sign({ org_id: 'globex' }))).status, 200, 'a fresh client token too');
  });

  test('a token without scope scim: 403 insufficient_scope, whatever its organization', async () => {
    const { server } = app();
    const res = await get(server, await sign({ scope: 'users_read' }));
    assert.equal(res.status, 403);
    assert.match(String(res.headers['www-authenticate']), /insufficient_scope/);
  });
});
