import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The gateway's attestation of the caller it verified, for a service that must not trust a field the caller fills in
 * (the SCIM service's audit actor and the organization it acts inside): an HMAC-SHA256, with a secret only the gateway
 * and that service hold, over the actor, the organization, the request id, the time, a nonce of this one request and
 * the request itself (method, path, query, the headers the service reads, SHA-256 of the body). A captured
 * attestation is worth nothing for another actor, another organization, another request or after its window; the
 * service refuses its nonce a second time within the window (services/scim, replay cache).
 *
 * Format: `v2.<unix seconds>.<base64url nonce of 16 bytes>.<base64url HMAC>`. The verifier still takes v1
 * (`v1.<unix seconds>.<HMAC>`: no nonce, no headers) while `acceptV1` is set, for one release: the gateways of the
 * release before sign v1 during a rolling upgrade (docs/architecture.md, "The SCIM audit actor").
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

/** Who asks for what, in the order both versions cover it. */
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

/** The release-before format: verified only while `acceptV1` is set, signed only for a SCIM replica of that release. */
function macV1(secret: string, timestamp: number, request: AttestedRequest): Buffer {
  return mac(secret, ['v1', timestamp, ...requestFields(request), bodySha256(request.body)]);
}

/** The attestation of `request` at `now` (ms), under a fresh nonce. */
export function attestActor(secret: string, request: AttestedRequest, now = Date.now()): string {
  const timestamp = Math.floor(now / 1000);
  const nonce = randomBytes(NONCE_BYTES).toString('base64url');
  return `v2.${timestamp}.${nonce}.${macV2(secret, timestamp, nonce, request).toString('base64url')}`;
}

/**
 * The v1 attestation of `request` (no nonce, no headers): only for a SCIM replica of the release before, which refuses
 * v2 as malformed (V1_ONLY_REFUSAL) while a rolling upgrade replaces it. Remove with `acceptV1`.
 */
export function attestActorV1(secret: string, request: AttestedRequest, now = Date.now()): string {
  const timestamp = Math.floor(now / 1000);
  return `v1.${timestamp}.${macV1(secret, timestamp, request).toString('base64url')}`;
}

/** How a SCIM replica of the release before words its refusal of a v2 attestation (it knows v1 only). */
export const V1_ONLY_REFUSAL = 'the caller is not attested by the gateway (malformed attestation)';

export type AttestationCheck =
  /**
   * `nonce` (v2) is the one use of this attestation: refuse it again until `expiresAtMs`, after which the window
   * refuses it. A v1 attestation has none: it cannot be checked for replay.
   */
  | { ok: true; version: 'v2'; nonce: string; expiresAtMs: number }
  | { ok: true; version: 'v1' }
  | { ok: false; reason: string };

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
  options: { maxAgeSeconds: number; acceptV1: boolean; now?: number },
): AttestationCheck {
  const v2 = /^v2\.(\d{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(attestation);
  const v1 = v2 ? null : /^v1\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(attestation);
  if (v1 && !options.acceptV1) return { ok: false, reason: 'v1 attestation no longer accepted' };
  const match = v2 ?? v1;
  if (!match) return { ok: false, reason: attestation ? 'malformed attestation' : 'no attestation' };
  const timestamp = Number(match[1]);
  const age = Math.floor((options.now ?? Date.now()) / 1000) - timestamp;
  if (Math.abs(age) > options.maxAgeSeconds) return { ok: false, reason: `attestation outside its window (${age} s)` };
  const given = Buffer.from(match[match.length - 1]!, 'base64url');
  for (const secret of secrets) {
    const expected = v2 ? macV2(secret, timestamp, v2[2]!, request) : macV1(secret, timestamp, request);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) continue;
    if (!v2) return { ok: true, version: 'v1' };
    // The last second the window takes it: age ≤ maxAgeSeconds, counted in whole seconds.
    return { ok: true, version: 'v2', nonce: v2[2]!, expiresAtMs: (timestamp + options.maxAgeSeconds + 1) * 1000 };
  }
  return { ok: false, reason: 'attestation does not match the request' };
}
