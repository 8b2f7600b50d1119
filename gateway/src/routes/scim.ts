import { scimV1 } from '@mileage/proto';
import { status, type ServiceError } from '@grpc/grpc-js';
import {
  ATTESTATION_REFUSALS,
  ATTESTED_HEADERS,
  attestActor,
  decodeServiceError,
  type CallSettings,
  type PromiseClient,
  unanswered,
  SCIM_AUDIENCE,
  type EndUserSigner,
  SAFE_SCIM_METHODS,
} from '@mileage/runtime/grpc';

import { type Logger, type Metrics, type Span, type TraceContext } from '@mileage/runtime/telemetry';
import { SCIM_SECRET_TOKEN_PREFIX } from '@mileage/runtime/formats';
import express, { type Request, type RequestHandler, type Response } from 'express';
import type { Caller, TokenVerifier } from '../auth';
import { authenticate, enforceRateLimit, invalidToken, requireScope } from '../guard';
import { secretTokenCaller, type OrganizationCredentials } from '../organization-credentials';
import { HttpProblem, logDownstreamFailure, problemFromGrpc, problemFromStatus, ValidationProblem } from '../problems';
import type { OrganizationShares } from '../fair-share';
import type { RateLimits } from '../rate-limit';
import { scimRequestCost } from '../request-cost';
import { ScimReads } from './scim-reads';

export const SCIM_SCOPE = 'scim';
/** Per organization: identity providers send bursts when a sync cycle starts. */
export const SCIM_REQUESTS_PER_MINUTE = 1200;
const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

export interface ScimRouteDeps {
  verifier: TokenVerifier;
  rateLimits: RateLimits;
  scim: PromiseClient<scimV1.ScimServiceClient>;
  /** Which organization a credential acts for; resolves SCIM secret tokens. */
  credentials: OrganizationCredentials;
  logger: Logger;
  bodyLimitBytes: number;
  deadlineMs: number;
  /** The secret shared with the SCIM service, which takes the audit actor only with this attestation of it. */
  actorAttestationSecret: string;
  /** Signs the end-user context the owners check (the provisioning client as the actor); undefined in plaintext. */
  endUserSigner?: EndUserSigner;
  metrics: Metrics;
  /** Each organization's share of this replica (fair-share.ts); unset: no share is enforced. */
  shares?: OrganizationShares;
}

/** An error as a SCIM Error resource (RFC 7644 §3.12), so identity providers log something useful. */
function sendScimError(res: Response, problem: HttpProblem, scimType?: string): void {
  const body = JSON.stringify({
    schemas: [SCIM_ERROR],
    status: String(problem.status),
    ...(scimType ? { scimType } : {}),
    detail: problem.detail,
  });
  res
    .status(problem.status)
    .set(problem.headers)
    .set('Content-Type', 'application/scim+json; charset=utf-8')
    .send(body);
}

/**
 * The SCIM service's refusal of this gateway's attestation (ATTESTATION_REFUSALS: a key that replica does not hold, or
 * a nonce it saw before), else undefined. Not the caller's fault: a retryable 503, never a 500.
 */
function attestationRefusal(err: unknown): { reason: string; message: string } | undefined {
  if ((err as { code?: unknown }).code !== status.UNAUTHENTICATED) return undefined;
  const decoded = decodeServiceError(err as ServiceError);
  return decoded.reason !== undefined && ATTESTATION_REFUSALS.has(decoded.reason)
    ? { reason: decoded.reason, message: decoded.message }
    : undefined;
}

/** A metrics label per endpoint family, never per id. */
function routeLabel(path: string): string {
  const endpoint = path.split('/')[1]?.toLowerCase() ?? '';
  const known: Record<string, string> = {
    users: 'scim_users',
    groups: 'scim_groups',
    serviceproviderconfig: 'scim_discovery',
    resourcetypes: 'scim_discovery',
    schemas: 'scim_discovery',
  };
  return known[endpoint] ?? 'scim_other';
}

/**
 * The caller of a SCIM request and the organization it acts for: a SCIM secret token (`mscim_…`), or a JWT whose
 * organization comes from its claims or its client's binding (undefined when the token lacks scope `scim`, which is
 * then refused for that). A `scim` credential that names no known organization is the same 401 as any invalid token.
 */
async function scimCaller(
  req: Request,
  deps: ScimRouteDeps,
  call: CallSettings,
): Promise<{ caller: Caller; organizationId: number | undefined }> {
  const caller = await authenticate(req, deps.verifier, (token) =>
    token.startsWith(SCIM_SECRET_TOKEN_PREFIX)
      ? deps.verifier
          .verifyOpaque(
            () => deps.credentials.resolveSecretToken(token, call),
            () => req.ip,
          )
          .then(secretTokenCaller)
      : deps.verifier.verify(token, () => req.ip),
  );
  if (!caller.scopes.has(SCIM_SCOPE)) return { caller, organizationId: undefined };
  // A failed lookup goes on as the gRPC error it is: the route's catch answers it as a SCIM error and logs it.
  const organizationId = await deps.credentials.organizationOf(caller, call);
  if (organizationId === undefined) throw invalidToken();
  return { caller, organizationId };
}

/**
 * /scim/v2: token and its organization (401) → rate limit per organization (429) → scope "scim" (403) → body (≤ limit,
 * 413: the only size check of a SCIM body), then the request is forwarded as it came to the SCIM service, which
 * decides the rest (the content type, 415, included). Errors are SCIM Error resources, so identity providers log
 * something useful.
 */
export function scimRoute(deps: ScimRouteDeps): RequestHandler {
  const readBody = express.raw({ type: () => true, limit: deps.bodyLimitBytes });
  const readRetries = deps.metrics.counter({
    name: 'gateway_scim_read_retries_total',
    help: 'SCIM GET and HEAD requests sent once more after their call to the SCIM service got no answer.',
  });
  const reads = new ScimReads(
    deps.scim,
    deps.metrics.counter({
      name: 'gateway_scim_batch_fallbacks_total',
      help: 'SCIM reads sent one call each because a SCIM replica of the release before knows no HandleRequests.',
    }),
  );
  return async (req: Request, res: Response) => {
    res.locals.routeId = routeLabel(req.path);
    const span = res.locals.span as Span | undefined;
    if (span?.isRecording()) span.updateName(`${req.method} /scim/v2/${req.path.split('/')[1] ?? ''}`);
    let release: (() => void) | undefined;
    try {
      const context: CallSettings = {
        requestId: res.locals.requestId as string,
        trace: res.locals.trace as TraceContext | undefined,
      };
      // The credential lookups keep their client's own deadline; the forwarded request gets the SCIM one.
      const { caller, organizationId } = await scimCaller(req, deps, context);
      const call: CallSettings = { ...context, deadlineMs: deps.deadlineMs };
      const limitedBy = organizationId === undefined ? (caller.clientId ?? caller.subject) : `org:${organizationId}`;
      await enforceRateLimit(res, deps.rateLimits, 'scim', limitedBy, SCIM_REQUESTS_PER_MINUTE);
      requireScope(caller, SCIM_SCOPE);
      const queryStart = req.originalUrl.indexOf('?');
      const query = queryStart >= 0 ? req.originalUrl.slice(queryStart + 1) : '';
      // Known here: a caller with scope scim has an organization (scimCaller refused it otherwise).
      release = deps.shares?.admit(organizationId!, scimRequestCost(req.method, req.path, query));
      // The provisioning client the owners record as the actor of SCIM's writes, vouched for by the gateway.
      if (deps.endUserSigner)
        call.endUser = deps.endUserSigner.sign({
          client: caller.clientId ?? caller.subject,
          org: organizationId!,
          scopes: [...caller.scopes],
          aud: [...SCIM_AUDIENCE],
        });
      await new Promise<void>((resolve, reject) =>
        readBody(req, res, (err?: unknown) => (err ? reject(err) : resolve())),
      );
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const headers: Record<string, string> = {};
      // The headers the SCIM service reads and the attestation covers; nothing else (cookies, tokens) crosses into it.
      for (const name of ATTESTED_HEADERS) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const forwarded = {
        method: req.method,
        path: req.path,
        query,
        headers,
        body,
        clientId: caller.clientId ?? caller.subject,
        organizationId: organizationId!,
      };
      // The verified credential and its organization, attested for this request: the SCIM service's audit actor and
      // the only organization it acts inside.
      const attested = { ...forwarded, actor: forwarded.clientId, requestId: call.requestId! };
      // Reads share a call with the other reads of this turn (ScimReads); a write has a call of its own.
      const handle = (request: scimV1.HandleRequestRequest) =>
        SAFE_SCIM_METHODS.has(req.method) ? reads.send({ request, call }) : deps.scim.handleRequest(request, call);
      const send = () => handle({ ...forwarded, actorAttestation: attestActor(deps.actorAttestationSecret, attested) });
      // A read whose call got no answer (its connection died under it: a replica draining or frozen) is sent once
      // more, as the typed clients' reads are (their retry policy); under a fresh attestation, since the first one's
      // nonce may have been spent by a replica that did receive it. Writes never are: they may have been applied.
      const answer = await send().catch((err: unknown) => {
        if (!SAFE_SCIM_METHODS.has(req.method) || !unanswered(err)) throw err;
        readRetries.inc();
        return send();
      });
      res.status(answer.status).set(answer.headers);
      if (req.method === 'HEAD' || answer.body.length === 0) res.end();
      else res.send(Buffer.from(answer.body));
    } catch (err) {
      if (err instanceof HttpProblem) return sendScimError(res, err);
      // The body parser's errors carry an HTTP status; a failed call to the SCIM service carries a gRPC code.
      const readStatus = (err as { status?: unknown }).status;
      if (readStatus === 413) {
        const detail = `The request body is larger than ${deps.bodyLimitBytes} bytes`;
        return sendScimError(res, new HttpProblem(413, detail, { Connection: 'close' }));
      }
      if (typeof readStatus === 'number' && readStatus >= 400 && readStatus < 500)
        return sendScimError(res, new HttpProblem(400, 'The request body could not be read'), 'invalidSyntax');
      const refusal = attestationRefusal(err);
      if (refusal !== undefined) {
        deps.logger.warn(
          { request_id: res.locals.requestId, reason: refusal.reason, detail: refusal.message },
          "the SCIM service refused the gateway's attestation: ACTOR_ATTESTATION_SECRET is not a key it holds " +
            '(a key rotation out of order? docs/operations.md), or it saw the nonce before',
        );
        return sendScimError(res, problemFromStatus(status.UNAVAILABLE));
      }
      const problem = problemFromGrpc(err);
      if (problem instanceof ValidationProblem)
        return sendScimError(res, new HttpProblem(400, problem.issues.map((i) => i.msg).join('; ')), 'invalidValue');
      logDownstreamFailure(deps.logger, err, problem.status, res.locals.requestId, 'SCIM request failed');
      sendScimError(res, problem);
    } finally {
      release?.();
    }
  };
}
