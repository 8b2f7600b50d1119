import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { test } from 'node:test';
import { ATTESTED_HEADERS, attestActor, verifyActorAttestation, type AttestedRequest } from './attestation';

const request = (body: Uint8Array, headers: Record<string, string> = {}): AttestedRequest => ({
  actor: 'okta-client',
  organizationId: 2,
  requestId: 'req-1',
  method: 'GET',
  path: '/Users',
  query: 'filter=userName%20eq%20%22a%22',
  headers,
  body,
});
const NOW = 1_790_000_000_123;
const options = { maxAgeSeconds: 30, now: NOW };

/** The HMAC as the format defines it, computed here from scratch. */
function expected(secret: string, timestamp: number, nonce: string, r: AttestedRequest): string {
  const canonical = JSON.stringify([
    'mileage.actor-attestation',
    'v2',
    timestamp,
    nonce,
    r.requestId,
    r.actor,
    r.organizationId,
    r.method,
    r.path,
    r.query,
    ATTESTED_HEADERS.map((name) => [name, r.headers[name] ?? null]),
    createHash('sha256').update(r.body).digest('hex'),
  ]);
  return `v2.${timestamp}.${nonce}.${createHmac('sha256', secret).update(canonical).digest('base64url')}`;
}
const nonceOf = (attestation: string) => attestation.split('.')[2]!;

test('an empty body (every GET) attests as the SHA-256 of no bytes, as any other body attests as its own', () => {
  for (const body of [new Uint8Array(0), Buffer.alloc(0), Buffer.from('{"userName":"a"}')]) {
    const attestation = attestActor('s3cret', request(body), NOW);
    assert.equal(attestation, expected('s3cret', 1_790_000_000, nonceOf(attestation), request(body)));
    assert.deepEqual(verifyActorAttestation(['s3cret'], attestation, request(body), options), {
      ok: true,
      version: 'v2',
      nonce: nonceOf(attestation),
      // Its window closes after second 1_790_000_030.
      expiresAtMs: 1_790_000_031_000,
    });
  }
  // The empty body's attestation does not pass for a request with a body, nor the other way round.
  const empty = attestActor('s3cret', request(new Uint8Array(0)), NOW);
  assert.equal(verifyActorAttestation(['s3cret'], empty, request(Buffer.from('x')), options).ok, false);
});

test('every attestation has a nonce of its own: 16 random bytes, not the request id', () => {
  const nonces = new Set(
    Array.from({ length: 100 }, () => nonceOf(attestActor('s3cret', request(Buffer.alloc(0)), NOW))),
  );
  assert.equal(nonces.size, 100);
  for (const nonce of nonces) assert.equal(Buffer.from(nonce, 'base64url').length, 16);
  // The nonce is covered: another one under the same MAC does not pass.
  const attestation = attestActor('s3cret', request(Buffer.alloc(0)), NOW);
  const [version, time, , hmac] = attestation.split('.');
  const swapped = `${version}.${time}.${nonceOf(attestActor('s3cret', request(Buffer.alloc(0)), NOW))}.${hmac}`;
  assert.equal(verifyActorAttestation(['s3cret'], swapped, request(Buffer.alloc(0)), options).ok, false);
});

test('the headers the SCIM service reads are covered: changed, added or taken away, the attestation fails', () => {
  const headers = { 'content-type': 'application/scim+json', 'if-match': 'W/"3"' };
  const attestation = attestActor('s3cret', request(Buffer.alloc(0), headers), NOW);
  const check = (h: Record<string, string>) =>
    verifyActorAttestation(['s3cret'], attestation, request(Buffer.alloc(0), h), options).ok;
  assert.equal(check(headers), true);
  assert.equal(check({ ...headers, 'if-match': 'W/"4"' }), false);
  assert.equal(check({ ...headers, 'if-match': '' }), false);
  assert.equal(check({ 'content-type': headers['content-type'] }), false);
  assert.equal(check({ ...headers, 'content-type': 'text/plain' }), false);
  assert.equal(check({ ...headers, 'if-none-match': '*' }), false);
  // Absent is not empty.
  const withoutPrecondition = attestActor('s3cret', request(Buffer.alloc(0)), NOW);
  assert.equal(
    verifyActorAttestation(['s3cret'], withoutPrecondition, request(Buffer.alloc(0), { 'if-match': '' }), options).ok,
    false,
  );
});

test('an attestation holds for its own organization only', () => {
  const attestation = attestActor('s3cret', request(new Uint8Array(0)), NOW);
  const elsewhere = { ...request(new Uint8Array(0)), organizationId: 3 };
  assert.deepEqual(verifyActorAttestation(['s3cret'], attestation, elsewhere, options), {
    ok: false,
    reason: 'attestation does not match the request',
  });
});

test('while a key rotates, an attestation under the current or the previous key holds, under any other key not', () => {
  const r = request(new Uint8Array(0));
  const check = (secrets: string[], signedWith: string) =>
    verifyActorAttestation(secrets, attestActor(signedWith, r, NOW), r, options);
  assert.equal(check(['new-key', 'old-key'], 'new-key').ok, true);
  assert.equal(check(['new-key', 'old-key'], 'old-key').ok, true);
  assert.deepEqual(check(['new-key', 'old-key'], 'third-key'), {
    ok: false,
    reason: 'attestation does not match the request',
  });
  // The old key dropped: its attestations are refused.
  assert.equal(check(['new-key'], 'old-key').ok, false);
});

test('a v1 attestation (no nonce, no headers; two releases before) is refused as malformed, even under the key', () => {
  const r = request(Buffer.from('{"userName":"a"}'));
  const canonical = JSON.stringify([
    'mileage.actor-attestation',
    'v1',
    1_790_000_000,
    ...[r.requestId, r.actor, r.organizationId, r.method, r.path, r.query],
    createHash('sha256').update(r.body).digest('hex'),
  ]);
  const v1 = `v1.1790000000.${createHmac('sha256', 's3cret').update(canonical).digest('base64url')}`;
  assert.deepEqual(verifyActorAttestation(['s3cret'], v1, r, options), { ok: false, reason: 'malformed attestation' });
});
