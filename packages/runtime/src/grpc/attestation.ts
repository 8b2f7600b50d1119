import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The gateway's attestation of the caller it verified, for a service that must not trust a field the caller fills in
 * (the SCIM service's audit actor and the organization it acts inside): an HMAC-SHA256, with a secret only the gateway
 * and that service hold, over the actor, the organization, the request id, the time, a nonce of this one request and
 * the request itself (method, path, query, the headers the service reads, SHA-256 of the body). A captured
 * attestation is worth nothing for another actor, another organization, another request or after its window; the
 * service refuses its nonce a second time within the window (services/scim, replay cache).
 *
 * Format: `v2.<unix seconds>.<base64url nonce of 16 bytes>.<base64url HMAC>`. The v1 format of two releases before
 * (no nonce, no headers: replayable) is refused like any malformed attestation.
 */
export interface AttestedRequest {
  actor: string;
  /** The organization the credential is bound to. */
  organizationId: number;
  requestId: string;
  method: string;
  path: string;
  query: string;
  /** Lower-case names; of them the MAC covers ATTESTED_HEADERS, which are all the service reads. */
  headers: Record<string, string>;
  body: Uint8Array;
}

/**
 * The request headers that change what the SCIM service does with a request (the body's media type, the ETag
 * preconditions), in the order the MAC covers them: the gateway forwards these and no other, the service reads no
 * other.
 */
export const ATTESTED_HEADERS = ['content-type', 'if-match', 'if-none-match'] as const;

/** SHA-256 of no bytes: the body of every GET, computed once. */
const EMPTY_BODY_SHA256 = createHash('sha256').update(Buffer.alloc(0)).digest('hex');
const NONCE_BYTES = 16;

function bodySha256(body: Uint8Array): string {
  return body.length === 0 ? EMPTY_BODY_SHA256 : createHash('sha256').update(body).digest('hex');
}

// JSON of an array: no two different requests share a canonical form (no separator can be smuggled into a field).
function mac(secret: string, fields: unknown[]): Buffer {
  return createHmac('sha256', secret)
    .update(JSON.stringify(['mileage.actor-attestation', ...fields]))
    .digest();
}

/** Who asks for what. */
function requestFields(request: AttestedRequest): unknown[] {
  const { requestId, actor, organizationId, method, path, query } = request;
  return [requestId, actor, organizationId, method, path, query];
}

function macV2(secret: string, timestamp: number, nonce: string, request: AttestedRequest): Buffer {
  return mac(secret, [
    'v2',
    timestamp,
    nonce,
    ...requestFields(request),
    // Absent is null, not "": a precondition left out is another request than an empty one.
    ATTESTED_HEADERS.map((name) => [name, request.headers[name] ?? null]),
    bodySha256(request.body),
  ]);
}

/** The attestation of `request` at `now` (ms), under a fresh nonce. */
export function attestActor(secret: string, request: AttestedRequest, now = Date.now()): string {
  const timestamp = Math.floor(now / 1000);
  const nonce = randomBytes(NONCE_BYTES).toString('base64url');
  return `v2.${timestamp}.${nonce}.${macV2(secret, timestamp, nonce, request).toString('base64url')}`;
}

export type AttestationCheck =
  /**
   * `nonce` is the one use of this attestation: refuse it again until `expiresAtMs`, after which the window refuses it.
   */
  { ok: true; version: 'v2'; nonce: string; expiresAtMs: number } | { ok: false; reason: string };

/**
 * The ErrorInfo reasons of a call refused for its attestation (UNAUTHENTICATED). The gateway answers each 503: its own
 * requests carry a fresh attestation under its key, so a refusal means a key this replica does not hold (a key
 * rotation done out of order) or a fault of the hop, not of the caller, and a retry may not meet it again.
 */
export const ACTOR_NOT_ATTESTED = 'ACTOR_NOT_ATTESTED';
/** A genuine attestation whose nonce this replica has already taken within its window. */
export const ATTESTATION_REPLAYED = 'ATTESTATION_REPLAYED';
export const ATTESTATION_REFUSALS: ReadonlySet<string> = new Set([ACTOR_NOT_ATTESTED, ATTESTATION_REPLAYED]);

/**
 * Checks an attestation against the request it came with: the format, its age (at most `maxAgeSeconds` either way,
 * for clock skew) and the HMAC under any of `secrets` (the current one and, while rotating, the previous one). Whether
 * its nonce was used before is the caller's to check.
 */
export function verifyActorAttestation(
  secrets: readonly string[],
  attestation: string,
  request: AttestedRequest,
  options: { maxAgeSeconds: number; now?: number },
): AttestationCheck {
  const match = /^v2\.(\d{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(attestation);
  if (!match) return { ok: false, reason: attestation ? 'malformed attestation' : 'no attestation' };
  const timestamp = Number(match[1]);
  const age = Math.floor((options.now ?? Date.now()) / 1000) - timestamp;
  if (Math.abs(age) > options.maxAgeSeconds) return { ok: false, reason: `attestation outside its window (${age} s)` };
  const nonce = match[2]!;
  const given = Buffer.from(match[3]!, 'base64url');
  for (const secret of secrets) {
    const expected = macV2(secret, timestamp, nonce, request);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) continue;
    // The last second the window takes it: age ≤ maxAgeSeconds, counted in whole seconds.
    return { ok: true, version: 'v2', nonce, expiresAtMs: (timestamp + options.maxAgeSeconds + 1) * 1000 };
  }
  return { ok: false, reason: 'attestation does not match the request' };
}
