import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { test } from 'node:test';
import { attestActor, verifyActorAttestation, type AttestedRequest } from './attestation';

const request = (body: Uint8Array): AttestedRequest => ({
  actor: 'okta-client',
  organizationId: 2,
  requestId: 'req-1',
  method: 'GET',
  path: '/Users',
  query: 'filter=userName%20eq%20%22a%22',
  body,
});

/** The HMAC as the format defines it, computed here from scratch. */
function expected(secret: string, timestamp: number, r: AttestedRequest): string {
  const canonical = JSON.stringify([
    'mileage.actor-attestation',
    'v1',
    timestamp,
    r.requestId,
    r.actor,
    r.organizationId,
    r.method,
    r.path,
    r.query,
    createHash('sha256').update(r.body).digest('hex'),
  ]);
  return `v1.${timestamp}.${createHmac('sha256', secret).update(canonical).digest('base64url')}`;
}

test('an empty body (every GET) attests as the SHA-256 of no bytes, as any other body attests as its own', () => {
  const now = 1_790_000_000_123;
  for (const body of [new Uint8Array(0), Buffer.alloc(0), Buffer.from('{"userName":"a"}')]) {
    const attestation = attestActor('s3cret', request(body), now);
    assert.equal(attestation, expected('s3cret', 1_790_000_000, request(body)));
    assert.deepEqual(verifyActorAttestation(['s3cret'], attestation, request(body), { maxAgeSeconds: 30, now }), {
      ok: true,
    });
  }
  // The empty body's attestation does not pass for a request with a body, nor the other way round.
  const empty = attestActor('s3cret', request(new Uint8Array(0)), now);
  const check = verifyActorAttestation(['s3cret'], empty, request(Buffer.from('x')), { maxAgeSeconds: 30, now });
  assert.equal(check.ok, false);
});

test('an attestation holds for its own organization only', () => {
  const now = 1_790_000_000_123;
  const attestation = attestActor('s3cret', request(new Uint8Array(0)), now);
  const elsewhere = { ...request(new Uint8Array(0)), organizationId: 3 };
  const check = verifyActorAttestation(['s3cret'], attestation, elsewhere, { maxAgeSeconds: 30, now });
  assert.deepEqual(check, { ok: false, reason: 'attestation does not match the request' });
});

test('while a key rotates, an attestation under the current or the previous key holds, under any other key not', () => {
  const now = 1_790_000_000_123;
  const r = request(new Uint8Array(0));
  const check = (secrets: string[], signedWith: string) =>
    verifyActorAttestation(secrets, attestActor(signedWith, r, now), r, { maxAgeSeconds: 30, now });
  assert.deepEqual(check(['new-key', 'old-key'], 'new-key'), { ok: true });
  assert.deepEqual(check(['new-key', 'old-key'], 'old-key'), { ok: true });
  assert.deepEqual(check(['new-key', 'old-key'], 'third-key'), {
    ok: false,
    reason: 'attestation does not match the request',
  });
  // The old key dropped: its attestations are refused.
  assert.equal(check(['new-key'], 'old-key').ok, false);
});
