import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import type { Request, Response } from 'express';
import { addressGroup, TokenError, TokenVerifier, type RefusalReason, type TokenVerifierOptions } from './auth';
import { TEST_ISSUER, TEST_VERIFIER_OPTIONS } from './verifier.fixture';
import { guard } from './guard';
import { HttpProblem } from './problems';
import { RateLimits } from './rate-limit';

const ISSUER = TEST_ISSUER;

async function setup(options: Partial<TokenVerifierOptions> = {}) {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  let fetches = 0;
  const local = createLocalJWKSet({ keys: [jwk] });
  const verifier = new TokenVerifier({
    ...TEST_VERIFIER_OPTIONS,
    jwks: (header, token) => {
      fetches++;
      return local(header, token);
    },
    cacheSize: 2,
    ...options,
  });
  const sign = (
    { iss = ISSUER, aud = ['mileage-api', 'account'], iat, ...claims }: Record<string, unknown> = {},
    exp: string | number = '5m',
    headerTyp: string | undefined = 'JWT',
  ) =>
    new SignJWT({
      scope: 'users_read drives_read',
      user_id: 'AliceAdm01',
      typ: 'Bearer',
      azp: 'mileage-dev',
      ...claims,
    })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1', ...(headerTyp === undefined ? {} : { typ: headerTyp }) })
      .setIssuer(iss as string)
      .setAudience(aud as string[])
      .setSubject('sub-alice')
      .setIssuedAt(iat as number | undefined)
      .setExpirationTime(exp)
      .sign(privateKey);
  return { verifier, sign, fetches: () => fetches };
}

describe('TokenVerifier', () => {
  test('accepts a valid token and reads caller, scopes and client', async () => {
    const { verifier, sign } = await setup();
    const caller = await verifier.verify(await sign());
    assert.equal(caller.subject, 'sub-alice');
    assert.equal(caller.userId, 'AliceAdm01');
    assert.equal(caller.clientId, 'mileage-dev');
    assert.deepEqual([...caller.scopes].sort(), ['drives_read', 'users_read']);
  });

  test('a verified token is served from the cache until it expires', async () => {
    let now = Date.now();
    const { verifier, sign, fetches } = await setup({ now: () => now });
    const token = await sign({}, '60s');
    await verifier.verify(token);
    await verifier.verify(token);
    assert.equal(fetches(), 1);
    now += 120_000;
    await assert.rejects(
      verifier.verify(token),
      (err: unknown) => err instanceof TokenError && /expired/.test(err.message),
    );
  });

  test('concurrent requests with one unseen token share one signature check, and each is refused when it fails', async () => {
    const refused: RefusalReason[] = [];
    const { verifier, sign, fetches } = await setup({
      onRefused: (reason) => void refused.push(reason),
      invalidTokenLimit: { burst: 100, perMinute: 60 },
    });
    const token = await sign();
    const callers = await Promise.all(Array.from({ length: 16 }, () => verifier.verify(token, '192.0.2.1')));
    assert.equal(fetches(), 1);
    assert.ok(callers.every((c) => c === callers[0]));
    // Verified once, then from the cache: a second burst checks nothing, nor reads the client's address.
    let addressReads = 0;
    const address = () => (addressReads++, '192.0.2.1');
    await Promise.all(Array.from({ length: 4 }, () => verifier.verify(token, address)));
    assert.equal(fetches(), 1);
    assert.equal(addressReads, 0);

    const forged = `${token.slice(0, token.lastIndexOf('.'))}.${'A'.repeat(342)}`;
    const results = await Promise.allSettled(Array.from({ length: 3 }, () => verifier.verify(forged, address)));
    assert.ok(results.every((r) => r.status === 'rejected' && r.reason instanceof TokenError));
    assert.equal(fetches(), 2);
    // Every refused request is counted, not only the check.
    assert.deepEqual(refused, ['signature', 'signature', 'signature']);
    // The address is read only to charge a refusal.
    assert.equal(addressReads, 3);
    // A failed check is not remembered: the next request checks again.
    await assert.rejects(verifier.verify(forged));
    assert.equal(fetches(), 3);
  });

  test('the cache is bounded', async () => {
    const { verifier, sign, fetches } = await setup();
    const tokens = [await sign({ jti: 'a' }), await sign({ jti: 'b' }), await sign({ jti: 'c' })];
    for (const t of tokens) await verifier.verify(t);
    await verifier.verify(tokens[0]!); // evicted: verified again
    assert.equal(fetches(), 4);
  });

  test('refuses wrong issuer, wrong audience, expiry beyond the skew and non-access tokens', async () => {
    const { verifier, sign } = await setup();
    await assert.rejects(verifier.verify(await sign({ iss: 'http://evil/realms/mileage' })), TokenError);
    await assert.rejects(verifier.verify(await sign({ aud: 'other-api' })), TokenError);
    await assert.rejects(verifier.verify(await sign({}, '-31s')), /expired/);
    await assert.rejects(verifier.verify(await sign({ typ: 'ID' })), /not an access token/);
  });

  test('JOSE header typ: at+jwt in any spelling, JWT or none; an ID or logout token is refused', async () => {
    const { verifier, sign, fetches } = await setup();
    for (const typ of ['at+jwt', 'AT+JWT', 'application/at+jwt', 'JWT', 'jwt', undefined])
      assert.equal((await verifier.verify(await sign({ jti: `${typ}` }, '5m', typ))).userId, 'AliceAdm01', typ);
    const keyLookups = fetches();
    for (const typ of ['id_token+jwt', 'logout+jwt', 'application/jwt+at', 'JOSE'])
      await assert.rejects(verifier.verify(await sign({}, '5m', typ)), /not an access token/, typ);
    assert.equal(fetches(), keyLookups, 'refused before the signature check');
  });

  test('with at+jwt required, a JWT or untyped token is refused', async () => {
    const { verifier, sign } = await setup({ requireAccessTokenType: true });
    assert.equal((await verifier.verify(await sign({}, '5m', 'Application/AT+JWT'))).userId, 'AliceAdm01');
    await assert.rejects(verifier.verify(await sign({}, '5m', 'JWT')), /not an access token/);
    await assert.rejects(verifier.verify(await sign({}, '5m', undefined)), /not an access token/);
  });

  test('refuses an iat in the future beyond the skew, and a token older than the maximum age whatever its exp', async () => {
    let now = Date.now();
    const { verifier, sign } = await setup({ now: () => now });
    const second = Math.floor(now / 1000);
    const tenYears = second + 10 * 365 * 86400;
    await assert.rejects(verifier.verify(await sign({ iat: second + 365 * 86400 }, tenYears)), /claim "iat"/);
    await assert.rejects(verifier.verify(await sign({ iat: second + 31 }, tenYears)), /claim "iat"/);
    await verifier.verify(await sign({ iat: second + 20, jti: 'within-skew' }, tenYears));
    await assert.rejects(verifier.verify(await sign({ iat: second - 86400 - 31 }, tenYears)), /expired/);
    // A cached token ages out too: a day after its iat it is verified again and refused.
    const token = await sign({ iat: second, jti: 'ages' }, tenYears);
    await verifier.verify(token);
    now += (86400 + 31) * 1000;
    await assert.rejects(verifier.verify(token), /expired/);
  });

  test('accepts a token expired by less than the clock skew', async () => {
    const { verifier, sign } = await setup();
    const caller = await verifier.verify(await sign({}, '-10s'));
    assert.equal(caller.userId, 'AliceAdm01');
  });

  test('a token without user_id yields a caller without a user', async () => {
    const { verifier, sign } = await setup();
    const caller = await verifier.verify(await sign({ user_id: undefined, scope: 'scim' }));
    assert.equal(caller.userId, undefined);
  });

  test('what needs no key is checked first: junk, another realm, another audience, expired, a foreign alg', async () => {
    const { verifier, sign, fetches } = await setup();
    const good = await sign();
    const [header, payload] = good.split('.');
    const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
    const refusals: [string, RegExp][] = [
      ['junk', /malformed/],
      [`${header}.junk.junk`, /malformed/],
      [await sign({ iss: 'http://evil/realms/mileage' }), /claim "iss"/],
      [await sign({ aud: ['other-api'] }), /claim "aud"/],
      [await sign({}, '-31s'), /expired/],
      [await sign({ typ: 'Refresh' }), /not an access token/],
      [`${b64({ alg: 'HS256', kid: 'k1', typ: 'JWT' })}.${payload}.AAAA`, /algorithm/],
      [`${header}.${b64({ ...claims, sub: undefined })}.AAAA`, /claim "sub"/],
      [`${header}.${b64({ ...claims, nbf: claims.exp })}.AAAA`, /claim "nbf"/],
    ];
    for (const [token, reason] of refusals) await assert.rejects(verifier.verify(token), reason, token.slice(0, 40));
    assert.equal(fetches(), 0, 'no key lookup, no signature check');
    assert.equal((await verifier.verify(good)).userId, 'AliceAdm01');
    assert.equal(fetches(), 1);
  });

  test('junk from one address never gets a valid token from it refused; its further refusals are 429s', async () => {
    let now = Date.now();
    const refusals: [RefusalReason, boolean][] = [];
    const { verifier, sign, fetches } = await setup({
      now: () => now,
      cacheSize: 100,
      invalidTokenLimit: { burst: 5, perMinute: 60 },
      onRefused: (reason, limited) => void refusals.push([reason, limited]),
    });
    const cached = await sign({ jti: 'kept' });
    await verifier.verify(cached, '10.0.0.1'); // cached before the flood
    const outcome = (token: string, address: string) =>
      verifier.verify(token, address).then(
        () => 'ok',
        (err: TokenError) => err.kind,
      );
    const kinds: string[] = [];
    for (let i = 0; i < 50; i++) kinds.push(await outcome(`junk${i}`, '10.0.0.1'));
    assert.deepEqual(kinds, [...Array<string>(5).fill('invalid'), ...Array<string>(45).fill('limited')]);
    assert.equal(fetches(), 1, 'the junk cost no key lookup');
    // From the limited address: a fresh valid token (its first use) and the cached one are accepted.
    assert.equal(await outcome(await sign({ jti: 'fresh' }), '10.0.0.1'), 'ok');
    assert.equal(await outcome(cached, '10.0.0.1'), 'ok');
    assert.equal(fetches(), 2, 'the fresh token was verified');
    // A token that could be valid is verified even from the limited address: refused, as a 429 with the wait.
    const [header, payload] = cached.split('.');
    const forged = `${header}.${payload}.${Buffer.from('not a signature').toString('base64url')}`;
    const limited = await verifier.verify(forged, '10.0.0.1').catch((err: unknown) => err);
    assert.ok(limited instanceof TokenError && limited.kind === 'limited', String(limited));
    assert.equal(limited.reason, 'signature');
    assert.deepEqual(limited.wait, { perMinute: 60, retryAfterSeconds: 1 });
    assert.equal(fetches(), 3);
    // Another address is not limited.
    assert.equal(await outcome('junk', '10.0.0.2'), 'invalid');
    assert.deepEqual(refusals.slice(0, 6), [
      ...Array<[RefusalReason, boolean]>(5).fill(['malformed', false]),
      ['malformed', true],
    ]);
    assert.deepEqual(refusals.slice(-2), [
      ['signature', true],
      ['malformed', false],
    ]);
    // The bucket refills at the configured rate, one a second, while refusals keep draining it.
    now += 1_000;
    assert.equal(await outcome('junk', '10.0.0.1'), 'invalid');
    assert.equal(await outcome('junk', '10.0.0.1'), 'limited');
  });

  test('an IPv6 /64 is one address group; an IPv4-mapped address is its IPv4 address', async () => {
    assert.equal(addressGroup('192.0.2.7'), '192.0.2.7');
    assert.equal(addressGroup('::ffff:192.0.2.7'), '192.0.2.7');
    assert.equal(addressGroup('::FFFF:c000:0207'), '192.0.2.7');
    assert.equal(addressGroup('2001:db8:1:2::1'), '2001:db8:1:2::/64');
    assert.equal(addressGroup('2001:0db8:0001:0002:ffff:eeee:dddd:cccc'), '2001:db8:1:2::/64');
    assert.equal(addressGroup('2001:db8::5%eth0'), '2001:db8:0:0::/64');
    assert.equal(addressGroup('::1'), '0:0:0:0::/64');
    assert.equal(addressGroup('64:ff9b::192.0.2.7'), '64:ff9b:0:0::/64');
    const { verifier } = await setup({ invalidTokenLimit: { burst: 2, perMinute: 1 } });
    const kind = (address: string) =>
      verifier.verify('junk', address).then(
        () => 'ok',
        (err: TokenError) => err.kind,
      );
    assert.equal(await kind('2001:db8:1:2::1'), 'invalid');
    assert.equal(await kind('2001:db8:1:2:abcd::9'), 'invalid');
    assert.equal(await kind('2001:db8:1:2::ffff'), 'limited', 'the same /64');
    assert.equal(await kind('2001:db8:1:3::1'), 'invalid', 'the next /64');
    assert.equal(await kind('::ffff:198.51.100.1'), 'invalid');
    assert.equal(await kind('198.51.100.1'), 'invalid');
    assert.equal(await kind('198.51.100.1'), 'limited', 'mapped and plain IPv4 count together');
  });

  test('the guard answers a refused token 401 without saying why, a limited address 429; a valid token passes', async () => {
    const { verifier, sign } = await setup({ invalidTokenLimit: { burst: 1, perMinute: 6 } });
    const deps = { verifier, rateLimits: new RateLimits({}) };
    const rule = { limitId: 'test', perMinute: 30, scope: 'users_read' };
    const answer = async (token: string) => {
      const req = { headers: { authorization: `Bearer ${token}` }, ip: '10.0.0.9' } as unknown as Request;
      const res = { setHeader: () => res } as unknown as Response;
      return guard(req, res, deps, rule).catch((err: unknown) => err);
    };
    const expired = await sign({}, '-5m');
    const refused = await answer(expired);
    assert.ok(refused instanceof HttpProblem && refused.status === 401, String(refused));
    assert.equal(refused.headers['WWW-Authenticate'], 'Bearer realm="mileage", error="invalid_token"');
    const limited = await answer(expired);
    assert.ok(limited instanceof HttpProblem && limited.status === 429, String(limited));
    assert.equal(limited.headers['Retry-After'], '10');
    assert.equal(limited.headers['X-RateLimit-Limit'], '6');
    assert.equal(limited.headers['X-RateLimit-Remaining'], '0');
    const valid = await answer(await sign({ jti: 'valid, from the limited address' }));
    assert.ok(!(valid instanceof Error), String(valid));
    assert.equal((valid as { userId: string }).userId, 'AliceAdm01');
  });
});
