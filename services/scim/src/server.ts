import { scimV1 } from '@mileage/proto';
import { status as grpcStatus } from '@grpc/grpc-js';
import {
  ACTOR_NOT_ATTESTED,
  AppError,
  ATTESTATION_REPLAYED,
  ATTESTED_HEADERS,
  errors,
  MAX_BATCHED_SCIM_REQUESTS,
  SAFE_SCIM_METHODS,
  receivedEndUser,
  toAppError,
  toRpcStatus,
  verifyActorAttestation,
  type CallContext,
  type Handlers,
  type ServiceRegistration,
  type SignedEndUser,
} from '@mileage/runtime';
import { paging, type RequestContext, type ScimDeps, type ScimResponse } from './context';
import { Discovery } from './discovery';
import { ScimError, scimErrorFromGrpc, scimErrors } from './errors';
import { GroupHandlers } from './groups';
import { isObject } from './resource';
import { ReplayCache } from './replay-cache';
import { LIST_SCHEMA } from './schemas';
import { UserHandlers } from './users';

export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';

type Route = (ctx: RequestContext, body: () => unknown, id: string | undefined) => Promise<ScimResponse> | ScimResponse;

/** The SCIM 2.0 protocol layer behind /scim/v2; the gateway authenticates and forwards, this decides. */
export function createServer(deps: ScimDeps): ServiceRegistration {
  const users = new UserHandlers(deps);
  const groups = new GroupHandlers(deps);
  const discovery = new Discovery(deps.baseUrl);
  const ok = (body: unknown): ScimResponse => ({ status: 200, body });
  const groupsAreThePlatforms = () => {
    throw scimErrors.notImplemented(
      'Groups are created and deleted by the platform; SCIM manages their name and members',
    );
  };

  // Endpoint (case-insensitive) → method → handler; `id` is the path segment after the endpoint.
  const routes: Record<string, { collection: Record<string, Route>; item: Record<string, Route> }> = {
    '.search': { collection: { POST: (ctx, body) => searchAll(searchContext(ctx, body())) }, item: {} },
    users: {
      collection: { GET: (ctx) => users.list(ctx), POST: (ctx, body) => users.create(body(), ctx) },
      item: {
        GET: (ctx, _b, id) => users.get(id!, ctx),
        // POST on an item is the search (…/.search) only: dispatch answers 405 for any other id.
        POST: (ctx, body) => users.list(searchContext(ctx, body())),
        PUT: (ctx, body, id) => users.replace(id!, body(), ctx),
        PATCH: (ctx, body, id) => users.patch(id!, body(), ctx),
        DELETE: (ctx, _b, id) => users.delete(id!, ctx),
      },
    },
    groups: {
      collection: { GET: (ctx) => groups.list(ctx), POST: groupsAreThePlatforms },
      item: {
        GET: (ctx, _b, id) => groups.get(id!, ctx),
        POST: (ctx, body) => groups.list(searchContext(ctx, body())),
        PUT: (ctx, body, id) => groups.replace(id!, body(), ctx),
        PATCH: (ctx, body, id) => groups.patch(id!, body(), ctx),
        DELETE: groupsAreThePlatforms,
      },
    },
    serviceproviderconfig: { collection: { GET: () => ok(discovery.serviceProviderConfig()) }, item: {} },
    resourcetypes: {
      collection: { GET: () => ok(discovery.resourceTypes()) },
      item: { GET: (_c, _b, id) => ok(discovery.resourceTypes(id)) },
    },
    schemas: {
      collection: { GET: () => ok(discovery.schemas()) },
      item: { GET: (_c, _b, id) => ok(discovery.schemas(id)) },
    },
  };

  /** Searches every resource type (RFC 7644 §3.4.3 at the root): users first, then groups, one index space. */
  async function searchAll(ctx: RequestContext): Promise<ScimResponse> {
    const { startIndex, count } = paging(ctx.query);
    const part = async (list: (c: RequestContext) => Promise<ScimResponse>, offset: number, limit: number) => {
      const query = new URLSearchParams(ctx.query);
      query.set('startIndex', String(offset + 1));
      query.set('count', String(limit));
      try {
        return (await list({ ...ctx, query, lenientSelection: true })).body as {
          totalResults: number;
          Resources: unknown[];
        };
      } catch (err) {
        // A filter naming attributes another resource type does not have matches none of that type.
        if (err instanceof ScimError && err.scimType === 'invalidFilter') return { totalResults: 0, Resources: [] };
        throw err;
      }
    };
    const userPage = await part((c) => users.list(c), startIndex - 1, count);
    const groupOffset = Math.max(0, startIndex - 1 - userPage.totalResults);
    const groupPage = await part((c) => groups.list(c), groupOffset, Math.max(0, count - userPage.Resources.length));
    const resources = [...userPage.Resources, ...groupPage.Resources];
    return {
      status: 200,
      body: {
        schemas: [LIST_SCHEMA],
        totalResults: userPage.totalResults + groupPage.totalResults,
        startIndex,
        itemsPerPage: resources.length,
        Resources: resources,
      },
    };
  }

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

  async function dispatch(
    request: scimV1.HandleRequestRequest,
    headers: Record<string, string>,
    call: CallContext,
    { actor, nonce }: Attested,
  ): Promise<ScimResponse> {
    const segments = request.path
      .split('/')
      .filter(Boolean)
      .map((s) => {
        try {
          return decodeURIComponent(s);
        } catch {
          // A malformed %-escape names no resource (it was once an uncaught URIError: a 500).
          throw scimErrors.notFound(`No endpoint ${request.path}`);
        }
      });
    const endpoint = routes[segments[0]?.toLowerCase() ?? ''];
    if (!endpoint || segments.length > 2) {
      if (['bulk', 'me'].includes(segments[0]?.toLowerCase() ?? ''))
        throw scimErrors.notImplemented(`/${segments[0]} is not supported`);
      throw scimErrors.notFound(`No endpoint ${request.path}`);
    }
    const table = segments.length === 2 ? endpoint.item : endpoint.collection;
    const method = request.method.toUpperCase() === 'HEAD' ? 'GET' : request.method.toUpperCase();
    // …/.search answers POST only, and an item every method of its table but POST (the search's): so the 405's
    // Allow lists exactly what the path has, as the OpenAPI document does.
    const search = segments.length === 2 && segments[1] === '.search' && 'POST' in table;
    const allowed = Object.keys(table).filter((m) => segments.length === 1 || (m === 'POST') === search);
    const route = allowed.includes(method) ? table[method] : undefined;
    if (!route)
      throw new ScimError(405, `${request.method} is not allowed on ${request.path}`, undefined, {
        Allow: allowed.join(', '),
      });
    const ctx: RequestContext = {
      actor,
      organizationId: request.organizationId,
      requestId: call.requestId,
      ...(nonce ? { attestationNonce: nonce } : {}),
      // Every owner call acts inside the credential's organization: the owners scope everything by it.
      call: {
        requestId: call.requestId,
        organizationId: request.organizationId,
        ...(call.trace ? { trace: call.trace } : {}),
        // The gateway's context of this request's provisioning client, forwarded: the owners check it.
        ...endUserOf(call),
      },
      query: new URLSearchParams(request.query),
      headers,
    };
    const body = () => readJson(request.body, headers['content-type']);
    return route(ctx, body, segments[1]);
  }

  /** One SCIM request, attested first: a refusal is thrown (the call's gRPC status), never a SCIM error body. */
  async function handleOne(
    request: scimV1.HandleRequestRequest,
    callCtx: CallContext,
  ): Promise<scimV1.HandleRequestResponse> {
    const headers = attestedHeaders(request.headers);
    const attested = attestedActor(request, headers, callCtx);
    let response: ScimResponse;
    try {
      response = await dispatch(request, headers, callCtx, attested);
    } catch (err) {
      const scimError = err instanceof ScimError ? err : scimErrorFromGrpc(err);
      // Anything else is a bug: the gRPC server logs it and answers INTERNAL without details.
      if (!scimError) throw err;
      // An owner's server-side failure (its details stay in its own log) is worth a line here too.
      if (!(err instanceof ScimError) && scimError.status >= 500 && ![503, 504].includes(scimError.status))
        deps.logger.error({ err, request_id: callCtx.requestId }, 'an owner service failed');
      response = { status: scimError.status, headers: scimError.headers, body: scimError.body() };
    }
    const payload = response.body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(response.body));
    return {
      status: response.status,
      headers: { ...(payload.length ? { 'Content-Type': SCIM_CONTENT_TYPE } : {}), ...(response.headers ?? {}) },
      body: payload,
    };
  }

  const handlers: Handlers<scimV1.ScimServiceServer> = {
    handleRequest: (request, callCtx) => handleOne(request, callCtx),

    async handleRequests(batch, callCtx) {
      if (batch.requests.length > MAX_BATCHED_SCIM_REQUESTS)
        throw errors.invalidArgument(`at most ${MAX_BATCHED_SCIM_REQUESTS} requests per call`, [
          { field: 'requests', description: `at most ${MAX_BATCHED_SCIM_REQUESTS}` },
        ]);
      // Reads only: the batch's requests run concurrently, in no order, and the gateway sends a read that got no
      // answer again (under a fresh attestation), which only a request without effects allows.
      batch.requests.forEach(({ method }, i) => {
        if (!SAFE_SCIM_METHODS.has(method.toUpperCase()))
          throw errors.invalidArgument('only GET and HEAD requests are batched', [
            { field: `requests[${i}].method`, description: 'GET or HEAD' },
          ]);
      });
      // Each request as HandleRequest would take it: the call's client and organization (which the end-user context
      // vouched for), its own request id (which its attestation covers), and its own answer or failure.
      const results = await Promise.all(
        batch.requests.map(async ({ requestId, actorAttestation, ...request }): Promise<scimV1.BatchedResult> => {
          const one = { ...request, clientId: batch.clientId, organizationId: batch.organizationId, actorAttestation };
          try {
            return { result: { $case: 'response', value: await handleOne(one, { ...callCtx, requestId }) } };
          } catch (err) {
            const { appError, unexpected } = toAppError(err);
            if (unexpected) deps.logger.error({ err, request_id: requestId }, 'a batched SCIM request failed');
            return { result: { $case: 'error', value: toRpcStatus(appError) } };
          }
        }),
      );
      return { results };
    },
  };
  return { definition: scimV1.ScimServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}

/**
 * The request headers this service acts on, lower-cased: the attested ones and no other, so that a header the MAC
 * does not cover changes nothing. The value checked is the value used (of two names differing in case, the last).
 */
function attestedHeaders(given: Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    const lower = name.toLowerCase();
    if ((ATTESTED_HEADERS as readonly string[]).includes(lower)) headers[lower] = value;
  }
  return headers;
}

/** A SearchRequest body (POST …/.search) read as the query parameters of a GET. */
function searchContext(ctx: RequestContext, body: unknown): RequestContext {
  if (!isObject(body)) throw scimErrors.invalidSyntax('The search request must be a JSON object');
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(body)) {
    const name = ['filter', 'startIndex', 'count', 'attributes', 'excludedAttributes', 'sortBy', 'sortOrder'].find(
      (n) => n.toLowerCase() === key.toLowerCase(),
    );
    if (!name || value === null) continue;
    // A list (attributes, excludedAttributes) of names; anything else in it has the wrong type (String() of an
    // object whose toString is not a function throws).
    if (Array.isArray(value) && value.every((v) => typeof v === 'string' || typeof v === 'number'))
      query.set(name, value.map(String).join(','));
    else if (typeof value === 'string' || typeof value === 'number') query.set(name, String(value));
    else throw scimErrors.invalidValue(`"${key}" has the wrong type`);
  }
  return { ...ctx, query };
}

/** Deeper than any SCIM body nests (a PATCH value's sub-attributes are at depth 5); JSON.parse itself has no bound. */
const MAX_BODY_DEPTH = 32;

/**
 * Why a parsed JSON body cannot be taken, or undefined: nested past MAX_BODY_DEPTH (walking it further would exhaust
 * the stack), or holding a string or key that is not well-formed Unicode (a lone surrogate, which no UTF-8 text can
 * store).
 */
function bodyProblem(value: unknown, depth = 0): string | undefined {
  // In a /u pattern \p{Cs} matches only unpaired surrogates (a pair is one code point).
  if (typeof value === 'string')
    return /\p{Cs}/u.test(value) ? 'The request body holds a string that is not valid Unicode' : undefined;
  if (!value || typeof value !== 'object') return undefined;
  if (depth >= MAX_BODY_DEPTH) return `The request body nests deeper than ${MAX_BODY_DEPTH} levels`;
  for (const [key, item] of Object.entries(value)) {
    const problem = (Array.isArray(value) ? undefined : bodyProblem(key)) ?? bodyProblem(item, depth + 1);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Parses a JSON body sent as application/scim+json or application/json; anything else is refused (415). The content
 * type is checked here, once, because only this service knows which requests read a body; the size is the gateway's
 * check (BODY_LIMIT_BYTES, 413), made before it reads the bytes.
 */
function readJson(body: Buffer, contentType: string | undefined): unknown {
  if (contentType && !/^application\/(scim\+)?json\s*(;|$)/i.test(contentType)) {
    throw new ScimError(415, 'Send the body as application/scim+json (or application/json)');
  }
  if (body.length === 0) throw scimErrors.invalidSyntax('The request has no body');
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw scimErrors.invalidSyntax('The request body is not valid JSON');
  }
  const problem = bodyProblem(parsed);
  if (problem) throw scimErrors.invalidSyntax(problem);
  return parsed;
}

/** The provisioning client the gateway attested, and its attestation's nonce (the owners take it once). */
interface Attested {
  actor: string;
  nonce: string;
}

/** The end-user context the call came with, as CallSettings for the owner calls it makes. */
function endUserOf(call: CallContext): { endUser?: SignedEndUser } {
  const endUser = receivedEndUser(call.metadata);
  return endUser ? { endUser } : {};
}
