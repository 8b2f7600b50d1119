import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The gateway's attestation of the caller it verified, for a service that must not trust a field the caller fills in
 * (the SCIM service's audit actor and the organization it acts inside): an HMAC-SHA256, with a secret only the gateway
 * and that service hold, over the actor, the organization, the request id, the time and the request itself (method,
 * path, query, SHA-256 of the body). A captured attestation is worth nothing for another actor, another organization,
 * another request or after its window.
 *
 * Format: `v1.<unix seconds>.<base64url HMAC>`.
 */
export interface AttestedRequest {
  actor: string;
  /** The organization the credential is bound to. */
  organizationId: number;
  requestId: string;
  method: string;
  path: string;
  query: string;
  body: Uint8Array;
}

const VERSION = 'v1';
/** SHA-256 of no bytes: the body of every GET, computed once. */
const EMPTY_BODY_SHA256 = createHash('sha256').update(Buffer.alloc(0)).digest('hex');

function mac(secret: string, timestamp: number, request: AttestedRequest): Buffer {
  // JSON of an array: no two different requests share a canonical form (no separator can be smuggled into a field).
  const canonical = JSON.stringify([
    'mileage.actor-attestation',
    VERSION,
    timestamp,
    request.requestId,
    request.actor,
    request.organizationId,
    request.method,
    request.path,
    request.query,
    request.body.length === 0 ? EMPTY_BODY_SHA256 : createHash('sha256').update(request.body).digest('hex'),
  ]);
  return createHmac('sha256', secret).update(canonical).digest();
}

/** The attestation of `request` at `now` (ms). */
export function attestActor(secret: string, request: AttestedRequest, now = Date.now()): string {
  const timestamp = Math.floor(now / 1000);
  return `${VERSION}.${timestamp}.${mac(secret, timestamp, request).toString('base64url')}`;
}

export type AttestationCheck = { ok: true } | { ok: false; reason: string };

/**
 * The ErrorInfo reason of a call refused for its attestation (UNAUTHENTICATED). The gateway answers it 503: its key is
 * one this replica does not hold, which a key rotation done out of order causes and a retry may not meet again.
 */
export const ACTOR_NOT_ATTESTED = 'ACTOR_NOT_ATTESTED';

/**
 * Checks an attestation against the request it came with: the format, its age (at most `maxAgeSeconds` either way,
 * for clock skew) and the HMAC under any of `secrets` (the current one and, while rotating, the previous one).
 */
export function verifyActorAttestation(
  secrets: readonly string[],
  attestation: string,
  request: AttestedRequest,
  options: { maxAgeSeconds: number; now?: number },
): AttestationCheck {
  const match = /^v1\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(attestation);
  if (!match) return { ok: false, reason: attestation ? 'malformed attestation' : 'no attestation' };
  const timestamp = Number(match[1]);
  const age = Math.floor((options.now ?? Date.now()) / 1000) - timestamp;
  if (Math.abs(age) > options.maxAgeSeconds) return { ok: false, reason: `attestation outside its window (${age} s)` };
  const given = Buffer.from(match[2]!, 'base64url');
  for (const secret of secrets) {
    const expected = mac(secret, timestamp, request);
    if (given.length === expected.length && timingSafeEqual(given, expected)) return { ok: true };
  }
  return { ok: false, reason: 'attestation does not match the request' };
}
