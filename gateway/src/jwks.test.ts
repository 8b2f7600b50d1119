// The realm's keys through a real HTTP endpoint on loopback that can be made to fail: an identity-provider outage
// gives 503 for tokens that cannot be judged, never 401, and known keys outlive their cache age while it lasts.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { TokenError, TokenVerifier } from './auth';
import { TEST_ISSUER, TEST_VERIFIER_OPTIONS } from './verifier.fixture';

const ISSUER = TEST_ISSUER;
let server: Server;
let url: URL;
let answer: { status: number; keys: JWK[] } = { status: 200, keys: [] };
let requests = 0;
const signers: Record<string, CryptoKey> = {};
const publics: Record<string, JWK> = {};

before(async () => {
  for (const kid of ['k1', 'k2']) {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    signers[kid] = privateKey;
    publics[kid] = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  }
  server = createServer((_req, res) => {
    requests++;
    if (answer.status !== 200) return res.writeHead(answer.status).end('upstream trouble');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: answer.keys }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/certs`);
});
after(() => server.close());

function setup() {
  let now = Date.now();
  const events: boolean[] = [];
  const verifier = new TokenVerifier({
    ...TEST_VERIFIER_OPTIONS,
    jwks: url,
    now: () => now,
    onKeysStale: (stale) => events.push(stale),
  });
  const sign = (kid: string) =>
    new SignJWT({ scope: 'users_read', user_id: 'AliceAdm01', typ: 'Bearer' })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuer(ISSUER)
      .setAudience('mileage-api')
      .setSubject(`sub-${Math.random()}`)
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor(now / 1000) + 3600)
      .sign(signers[kid]!);
  return { verifier, sign, advance: (ms: number) => (now += ms), events };
}

async function kindOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (err) {
    assert.ok(err instanceof TokenError, String(err));
    return err.kind;
  }
}

describe('realm keys during an identity-provider outage', () => {
  test('JWKS answering 5xx or unreachable from the start: 503 (unavailable), not 401', async () => {
    const { verifier, sign } = setup();
    answer = { status: 503, keys: [] };
    assert.equal(await kindOf(verifier.verify(await sign('k1'))), 'unavailable');
    answer = { status: 500, keys: [] };
    const { verifier: other, sign: otherSign } = setup();
    assert.equal(await kindOf(other.verify(await otherSign('k1'))), 'unavailable');
  });

  test('known keys outlive their cache age while refreshes fail, and refreshes are throttled', async () => {
    const { verifier, sign, advance, events } = setup();
    answer = { status: 200, keys: [publics.k1!] };
    assert.equal(await kindOf(verifier.verify(await sign('k1'))), 'ok');
    answer = { status: 502, keys: [] };
    advance(11 * 60_000); // past the 10-minute cache age
    const before = requests;
    assert.equal(await kindOf(verifier.verify(await sign('k1'))), 'ok', 'stale-if-error');
    assert.deepEqual(events, [true]);
    for (let i = 0; i < 5; i++) assert.equal(await kindOf(verifier.verify(await sign('k1'))), 'ok');
    assert.equal(requests - before, 1, 'one refresh attempt per cooldown, however many tokens');
    // A kid the realm may have rotated to cannot be judged while the realm is down: 503, not 401.
    assert.equal(await kindOf(verifier.verify(await sign('k2'))), 'unavailable');
    // The realm comes back with a rotated key set.
    answer = { status: 200, keys: [publics.k1!, publics.k2!] };
    advance(31_000);
    assert.equal(await kindOf(verifier.verify(await sign('k2'))), 'ok');
    assert.deepEqual(events, [true, false]);
  });

  test('readiness: keys not loaded until a fetch works; the start-up fetch ignores the cooldown; loaded stays loaded', async () => {
    const { verifier, sign, advance } = setup();
    assert.equal(verifier.keysLoaded(), false);
    answer = { status: 503, keys: [] };
    await assert.rejects(verifier.loadKeys());
    assert.equal(verifier.keysLoaded(), false);
    answer = { status: 200, keys: [publics.k1!] };
    await verifier.loadKeys(); // moments after the failed attempt: not throttled
    assert.equal(verifier.keysLoaded(), true);
    answer = { status: 502, keys: [] };
    advance(11 * 60_000);
    assert.equal(await kindOf(verifier.verify(await sign('k1'))), 'ok');
    assert.equal(verifier.keysLoaded(), true, 'stale keys still judge tokens: the pod stays ready');
  });

  test('a kid the reachable realm does not publish is an invalid token (401)', async () => {
    const { verifier, sign } = setup();
    answer = { status: 200, keys: [publics.k1!] };
    assert.equal(await kindOf(verifier.verify(await sign('k2'))), 'invalid');
  });

  test('a cached verification ends when its key leaves the JWKS (rotation, or the periodic refresh)', async () => {
    const { verifier, sign, advance } = setup();
    answer = { status: 200, keys: [publics.k1!] };
    const old = await sign('k1');
    assert.equal(await kindOf(verifier.verify(old)), 'ok');
    // The realm rotates k1 out; a token of the new key k2 makes the gateway fetch the set again.
    answer = { status: 200, keys: [publics.k2!] };
    advance(31_000);
    assert.equal(await kindOf(verifier.verify(await sign('k2'))), 'ok');
    assert.equal(await kindOf(verifier.verify(old)), 'invalid', 'no longer served from the cache');

    // Without a new kid: the refresh after the cache age drops the removed key's tokens too.
    const other = setup();
    answer = { status: 200, keys: [publics.k1!, publics.k2!] };
    const [t1, t2] = [await other.sign('k1'), await other.sign('k2')];
    assert.equal(await kindOf(other.verifier.verify(t1)), 'ok');
    assert.equal(await kindOf(other.verifier.verify(t2)), 'ok');
    answer = { status: 200, keys: [publics.k2!] };
    other.advance(11 * 60_000);
    assert.equal(await kindOf(other.verifier.verify(t1)), 'invalid');
    assert.equal(await kindOf(other.verifier.verify(t2)), 'ok');
  });
});
