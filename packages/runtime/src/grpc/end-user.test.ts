// The gateway's end-user context: signed with its mutual-TLS key, checked against the CA and the gateway's identity,
// audience-bound and short-lived (grpc/end-user.test.ts: binding a request's user or audit actor). Certificates made by the openssl CLI.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import {
  END_USER_CONTEXT_TTL_SECONDS,
  END_USER_EXPIRY_SKEW_SECONDS,
  END_USER_RESIGN_MARGIN_SECONDS,
  EndUserSigner,
  EndUserVerifier,
  V1_AUDIENCE,
} from './end-user';
import { createTestPki, TEST_SPIFFE_PREFIX } from '../testing';

const dir = mkdtempSync(path.join(tmpdir(), 'end-user-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const pki = createTestPki(dir);
const other = createTestPki(mkdtempSync(path.join(dir, 'other-')), 'other-ca');
const ca = readFileSync(pki.caFile);

function signerOf(issued: { certFile: string; keyFile: string }, now: () => number = Date.now) {
  return new EndUserSigner(readFileSync(issued.certFile), readFileSync(issued.keyFile), now);
}
const gateway = signerOf(pki.issue('gateway', `${TEST_SPIFFE_PREFIX}gateway`));
const alice = { sub: 'AliceAdm01', org: 1, scopes: ['drives_read'], aud: [...V1_AUDIENCE] };
const drives = new EndUserVerifier(ca, TEST_SPIFFE_PREFIX, 'drives');

describe('end-user context', () => {
  test("is signed by the gateway's certificate of the trusted CA, for this service", () => {
    const scimSigner = signerOf(pki.issue('scim', `${TEST_SPIFFE_PREFIX}scim`));
    const foreign = signerOf(other.issue('gateway', `${TEST_SPIFFE_PREFIX}gateway`));
    assert.deepEqual(drives.check(scimSigner.sign(alice).token, scimSigner.sign(alice).cert), {
      ok: false,
      reason: "the signer's certificate is not the gateway's",
    });
    assert.deepEqual(drives.check(foreign.sign(alice).token, foreign.sign(alice).cert), {
      ok: false,
      reason: "the signer's certificate is not of the trusted CA",
    });
    // The gateway's token with another certificate beside it (or a token altered): the signature does not hold.
    const signed = gateway.sign(alice);
    const [v, body, signature] = signed.token.split('.');
    const altered = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString()), sub: 'BobDriver1' }),
    ).toString('base64url');
    assert.deepEqual(drives.check(`${v}.${altered}.${signature}`, signed.cert), {
      ok: false,
      reason: 'the end-user context is not signed by the gateway',
    });
    const forScim = gateway.sign({ ...alice, aud: ['scim'] });
    assert.deepEqual(drives.check(forScim.token, forScim.cert), {
      ok: false,
      reason: 'the end-user context is not for drives',
    });
  });

  test('lives END_USER_CONTEXT_TTL_SECONDS; the gateway reuses one until shortly before, then signs anew', () => {
    // From the real time: the test CA's certificates are valid from when openssl made them.
    let now = Date.now();
    const clock = () => now;
    const signer = signerOf(pki.issue('gateway-clock', `${TEST_SPIFFE_PREFIX}gateway`), clock);
    const verifier = new EndUserVerifier(ca, TEST_SPIFFE_PREFIX, 'drives', clock);
    const first = signer.sign(alice);
    assert.equal(signer.sign({ ...alice, scopes: [...alice.scopes] }), first, 'the same caller: the same context');
    assert.equal(verifier.check(first.token, first.cert).ok, true);
    now += (END_USER_CONTEXT_TTL_SECONDS - 10) * 1000;
    const second = signer.sign(alice);
    assert.notEqual(second.token, first.token, 'signed anew before the first expires');
    assert.equal(verifier.check(first.token, first.cert).ok, true, 'the first is still valid');
    now += (10 + END_USER_EXPIRY_SKEW_SECONDS + 1) * 1000;
    assert.deepEqual(verifier.check(first.token, first.cert), {
      ok: false,
      reason: 'the end-user context is outside its lifetime',
    });
    assert.equal(verifier.check(second.token, second.cert).ok, true);
  });

  test('a service takes a context up to END_USER_EXPIRY_SKEW_SECONDS past its exp, not a millisecond longer', () => {
    const issuedAt = Math.floor(Date.now() / 1000) * 1000;
    let now = issuedAt;
    const clock = () => now;
    const signer = signerOf(pki.issue('gateway-skew', `${TEST_SPIFFE_PREFIX}gateway`), clock);
    const exp = issuedAt + END_USER_CONTEXT_TTL_SECONDS * 1000;
    const boundary = exp + END_USER_EXPIRY_SKEW_SECONDS * 1000;
    const context = signer.sign(alice);
    // Each verifier checks it for the first time at its instant (the signature path) and again (its cache).
    const checkedAt = (at: number) => {
      const verifier = new EndUserVerifier(ca, TEST_SPIFFE_PREFIX, 'drives', () => at);
      return [verifier.check(context.token, context.cert).ok, verifier.check(context.token, context.cert).ok];
    };
    assert.deepEqual(checkedAt(exp), [true, true]);
    assert.deepEqual(checkedAt(boundary), [true, true], 'a service clock up to the tolerance ahead');
    assert.deepEqual(checkedAt(boundary + 1), [false, false]);
    const fresh = new EndUserVerifier(ca, TEST_SPIFFE_PREFIX, 'drives', () => boundary + 1);
    assert.deepEqual(fresh.check(context.token, context.cert), {
      ok: false,
      reason: 'the end-user context has expired',
    });
    // A verifier that took it while valid refuses it from the same instant on.
    let serviceNow = exp - 1_000;
    const cached = new EndUserVerifier(ca, TEST_SPIFFE_PREFIX, 'drives', () => serviceNow);
    assert.equal(cached.check(context.token, context.cert).ok, true);
    serviceNow = boundary + 1;
    assert.equal(cached.check(context.token, context.cert).ok, false);
    // The gateway stops handing it out END_USER_RESIGN_MARGIN_SECONDS before exp, beyond the tolerance.
    assert.ok(END_USER_RESIGN_MARGIN_SECONDS > END_USER_EXPIRY_SKEW_SECONDS);
    now = exp - END_USER_RESIGN_MARGIN_SECONDS * 1000 - 1;
    assert.equal(signer.sign(alice), context, 'reused until the margin');
    now = exp - END_USER_RESIGN_MARGIN_SECONDS * 1000;
    assert.notEqual(signer.sign(alice).token, context.token, 'signed anew from the margin on');
  });
});
