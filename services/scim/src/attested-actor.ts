import { status as grpcStatus } from '@grpc/grpc-js';
import type { scimV1 } from '@mileage/proto';
import {
  ACTOR_NOT_ATTESTED,
  AppError,
  ATTESTATION_REPLAYED,
  ATTESTED_HEADERS,
  verifyActorAttestation,
  type CallContext,
} from '@mileage/runtime/grpc';
import type { ScimDeps } from './context';
import { ReplayCache } from './replay-cache';

/** The provisioning client the gateway attested, and its attestation's nonce (the owners take it once). */
export interface Attested {
  actor: string;
  nonce: string;
}

/** The attested actor of one request, or its refusal (thrown). */
export type AttestedActor = (
  request: scimV1.HandleRequestRequest,
  headers: Record<string, string>,
  call: CallContext,
) => Attested;

/** The check of each request's attestation, with the metrics and the replay cache of them all. */
export function actorAttestation(deps: Pick<ScimDeps, 'attestation' | 'logger' | 'metrics' | 'now'>): AttestedActor {
  const now = deps.now ?? Date.now;
  const attestations = deps.metrics.counter({
    name: 'scim_attestations_total',
    help: 'Attestations of SCIM calls checked, by version (v2; unknown: not readable) and result.',
    labelNames: ['version', 'result'] as const,
  });
  const evictions = deps.metrics.counter({
    name: 'scim_attestation_replay_evictions_total',
    help: 'Nonces the full replay cache let go before their window closed (each replayable for the rest of it).',
  });
  let evictionsLogged = 0;
  const replays = new ReplayCache(deps.attestation.replayCacheEntries, () => {
    evictions.inc();
    // One line per window at most: under a sustained overflow every request evicts one.
    if (now() - evictionsLogged < deps.attestation.maxAgeSeconds * 1000) return;
    evictionsLogged = now();
    deps.logger.warn(
      { capacity: deps.attestation.replayCacheEntries },
      'the attestation replay cache is full: its oldest nonces give way before their window closes ' +
        '(raise ACTOR_ATTESTATION_REPLAY_CACHE_ENTRIES)',
    );
  });

  /**
   * The provisioning credential the gateway verified, attested by it with its organization for this one request (an
   * HMAC over actor, organization, request id, time, nonce and the request with the headers this service reads, with
   * the secret only the two share): neither the audit log's actor nor the organization every owner call acts inside is
   * a field a caller fills in freely, and the attestation is taken once.
   */
  function attestedActor(
    request: scimV1.HandleRequestRequest,
    headers: Record<string, string>,
    call: CallContext,
  ): Attested {
    // The organization is one (its .proto's organization_field: the organization interceptor refused a call naming none).
    const at = now();
    const check = verifyActorAttestation(
      deps.attestation.secrets,
      request.actorAttestation,
      {
        actor: request.clientId,
        organizationId: request.organizationId,
        requestId: call.requestId,
        method: request.method,
        path: request.path,
        query: request.query,
        headers,
        body: request.body,
      },
      { maxAgeSeconds: deps.attestation.maxAgeSeconds, now: at },
    );
    const version = check.ok ? check.version : 'unknown';
    const refuse = (result: string, reason: string, errorReason: string) => {
      attestations.inc({ version, result });
      deps.logger.warn({ request_id: call.requestId, reason }, 'SCIM call refused: its actor is not attested');
      return new AppError(grpcStatus.UNAUTHENTICATED, `the caller is not attested by the gateway (${reason})`, {
        reason: errorReason,
      });
    };
    if (!check.ok || !request.clientId)
      throw refuse('refused', check.ok ? 'no actor' : check.reason, ACTOR_NOT_ATTESTED);
    // Recorded before the request runs: a replay sent while the original is in flight is refused too.
    if (!replays.firstUse(check.nonce, check.expiresAtMs, at))
      throw refuse('replayed', 'attestation already used', ATTESTATION_REPLAYED);
    attestations.inc({ version, result: 'accepted' });
    return { actor: request.clientId, nonce: check.nonce };
  }

  return attestedActor;
}

/**
 * The request headers this service acts on, lower-cased: the attested ones and no other, so that a header the MAC
 * does not cover changes nothing. The value checked is the value used (of two names differing in case, the last).
 */
export function attestedHeaders(given: Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    const lower = name.toLowerCase();
    if ((ATTESTED_HEADERS as readonly string[]).includes(lower)) headers[lower] = value;
  }
  return headers;
}
