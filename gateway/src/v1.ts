import type { drivesV1, groupsV1, usersV1, webhooksV1 } from '@mileage/proto';
import type { CursorCodec } from './cursor';
import { V1_AUDIENCE, type CallSettings, type EndUserSigner, type PromiseClient } from '@mileage/runtime/grpc';
import { type Span, type TraceContext } from '@mileage/runtime/telemetry';
import type { Request, RequestHandler, Response } from 'express';
import type { Caller, TokenVerifier } from './auth';
import type { AccountLoader } from './account-loader';
import type { OrganizationShares } from './fair-share';
import type { OrganizationCredentials } from './organization-credentials';
import { POINT_COST } from './request-cost';
import { guard, invalidToken } from './guard';
import { HttpProblem, ValidationProblem, type ValidationIssue } from './problems';
import { HOUR, MINUTE, type RateLimits } from './rate-limit';
import type { V1_SCOPES } from './scopes';

/** A caller whose token names a platform user whose account is active. */
export interface Account {
  caller: Caller & { userId: string };
  user: usersV1.User;
}

export interface V1Deps {
  verifier: TokenVerifier;
  rateLimits: RateLimits;
  users: PromiseClient<usersV1.UsersServiceClient>;
  /** The Users process's OrganizationsService: SCIM tokens of the caller's organization. */
  organizations: PromiseClient<usersV1.OrganizationsServiceClient>;
  groups: PromiseClient<groupsV1.GroupsServiceClient>;
  drives: PromiseClient<drivesV1.DrivesServiceClient>;
  webhooks: PromiseClient<webhooksV1.WebhooksServiceClient>;
  cursors: CursorCodec;
  /** The verified callers' own accounts: what a request needs of them (USER_VIEW_ACCOUNT). */
  accounts: AccountLoader;
  /** The drivers of a page of reported drives: what a driver shows (USER_VIEW_DRIVER). */
  drivers: AccountLoader;
  /**
   * Signs the end-user context of each call (end-user.ts) with the gateway's mutual-TLS key; undefined in plaintext,
   * where the services check none.
   */
  endUserSigner?: EndUserSigner;
  /** Each organization's share of this replica (fair-share.ts); unset: no share is enforced. */
  shares?: OrganizationShares;
  /** SCIM credentials: a revoked secret token is forgotten here and announced to the other replicas. */
  credentials?: OrganizationCredentials;
}

/** A path or query parameter as the OpenAPI document declares it, written beside the code that validates it. */
export interface ApiParameter {
  name: string;
  in: 'path' | 'query';
  required?: true;
  deprecated?: true;
  description?: string;
  schema: object;
}

/** A handler's answer already rendered as JSON (UTF-8 chunks: a page a service rendered), written as it is. */
export class RenderedJson {
  constructor(readonly chunks: Uint8Array[]) {}
}

/**
 * A handler's answer written as it is produced (a person's own copy, an export's archive): `write` writes the body to
 * the response, waiting for it to drain between its parts, and ends it. What fails once the first byte is out cuts the
 * response short (a client then sees a body shorter than its Content-Length, or not ending as its format says).
 */
export class StreamedBody {
  constructor(
    readonly contentType: string,
    readonly write: (res: Response) => Promise<void>,
    /** Its status (206 for a range) and headers beyond the content type. */
    readonly head: { status?: 200 | 206; headers?: Record<string, string> } = {},
  ) {}
}

/**
 * One /v1 route: what the app mounts and what the OpenAPI document says about it (openapi.ts adds only prose and
 * examples, keyed by `id`). Adding a route is one RouteSpec in V1_ROUTES (routes/index.ts) and its prose.
 */
export interface RouteSpec<Input> {
  /** Stable id: the rate-limit key, the metrics label and the key of the route's prose in the OpenAPI document. */
  id: string;
  method: 'get' | 'post' | 'delete';
  /** Path template, e.g. /v1/users/{user_id}: the trace span name. */
  path: string;
  /** The scope the token must carry, or every one of several. */
  scope: V1Scope | readonly V1Scope[];
  /** Requests per caller per minute; or, for the few routes counted per hour, `perHour` instead. */
  perMinute?: number;
  perHour?: number;
  /** Every parameter `validate` reads, path parameters first in the template's order. */
  parameters: readonly ApiParameter[];
  /** A JSON body read raw up to `limitBytes` (larger: 413) and checked by `validate`: its components.schemas name. */
  body?: { schema: string; limitBytes: number };
  /** The success status (default 200); 204 sends no body. */
  status?: 200 | 201 | 202 | 204;
  /** The success body's components.schemas name (none with 204). */
  response?: string;
  /** The success body's media type when it is not JSON (a StreamedBody's). */
  responseType?: string;
  /** The success answer's `Location` (a 201's or 202's), from its body. */
  location?(body: unknown): string;
  /** RFC 9745: the route stays, marked deprecated since this time (a `Deprecation` header on every response). */
  deprecatedSince?: string;
  /** Its price in the organization's share of a replica (request-cost.ts); default a point read's. */
  cost?(input: Input): number;
  /** Parses path and query (and cursors, which are bound to the caller); returns every bad parameter (422). */
  validate(req: Request, context: { deps: V1Deps; caller: Caller }): { input: Input } | { issues: ValidationIssue[] };
  /**
   * Ownership / admin (403), then existence (404), then the response body. `call` carries the caller's organization:
   * every downstream call acts inside it.
   */
  handle(input: Input, account: Account, deps: V1Deps, call: CallSettings): Promise<unknown>;
}

export type V1Scope = keyof typeof V1_SCOPES;

/** A route's scopes, as a list. */
export const scopesOf = (spec: Pick<RouteSpec<unknown>, 'scope'>): readonly V1Scope[] =>
  typeof spec.scope === 'string' ? [spec.scope] : spec.scope;

/** A route's limit: requests per window (a minute or an hour); exactly one of perMinute and perHour is set. */
export function routeLimit(spec: Pick<RouteSpec<unknown>, 'id' | 'perMinute' | 'perHour'>): {
  requests: number;
  windowSeconds: number;
} {
  if ((spec.perMinute === undefined) === (spec.perHour === undefined))
    throw new Error(`the route ${spec.id} must set exactly one of perMinute and perHour`);
  return spec.perHour !== undefined
    ? { requests: spec.perHour, windowSeconds: HOUR }
    : { requests: spec.perMinute!, windowSeconds: MINUTE };
}

/** RFC 9745's Deprecation value: a structured-field Date (epoch seconds), not "true". */
export const deprecationHeader = (since: string) => `@${Date.parse(since) / 1000}`;

/**
 * Runs one /v1 route in the contract's order: token (401) → rate limit (429) → scope (403) →
 * validation (422) → caller account, ownership / admin (403) → existence (404).
 */
export function v1Route<Input>(spec: RouteSpec<Input>, deps: V1Deps): RequestHandler {
  const limit = routeLimit(spec);
  return async (req, res) => {
    res.locals.routeId = spec.id;
    if (spec.deprecatedSince) {
      // With a link to what replaces the route.
      res.setHeader('Deprecation', deprecationHeader(spec.deprecatedSince));
      res.setHeader('Link', '</docs>; rel="deprecation"; type="text/html"');
    }
    const span = res.locals.span as Span | undefined;
    if (span?.isRecording()) span.updateName(`${req.method} ${spec.path}`).setAttribute('http.route', spec.path);
    const caller = await guard(req, res, deps, {
      limitId: spec.id,
      perMinute: limit.requests,
      windowSeconds: limit.windowSeconds,
      scope: spec.scope,
    });

    const parsed = spec.validate(req, { deps, caller });
    if ('issues' in parsed) throw new ValidationProblem(parsed.issues);

    const call: CallSettings = {
      requestId: res.locals.requestId as string,
      trace: res.locals.trace as TraceContext | undefined,
    };
    const cost = spec.cost?.(parsed.input) ?? POINT_COST;
    // A caller whose organization is known is counted before its account is read: a refusal then asks nothing of the
    // services (an organization over its share would otherwise still load the Users service with account reads).
    const known = caller.userId === undefined ? undefined : deps.accounts.knownOrganization(caller.userId);
    let release = known === undefined ? undefined : deps.shares?.admit(known, cost);
    let result: unknown;
    try {
      const account = await loadAccount(caller, deps, call);
      // From here on every call acts inside the caller's organization (the one place /v1 sets it).
      const organizationId = account.user.organizationId;
      if (organizationId !== known) {
        release?.();
        release = deps.shares?.admit(organizationId, cost);
      }
      result = await spec.handle(parsed.input, account, deps, {
        ...call,
        organizationId,
        // Whom the owners act for: the user this token names, vouched for by the gateway.
        ...(deps.endUserSigner && {
          endUser: deps.endUserSigner.sign({
            sub: account.caller.userId,
            ...(caller.clientId ? { client: caller.clientId } : {}),
            org: organizationId,
            scopes: [...caller.scopes],
            aud: [...V1_AUDIENCE],
          }),
        }),
      });
    } finally {
      release?.();
    }
    if (spec.status === 204) {
      res.writeHead(204).end();
      return;
    }
    if (result instanceof StreamedBody) {
      res.writeHead(result.head.status ?? 200, { ...result.head.headers, 'Content-Type': result.contentType });
      // HEAD: the headers only; nothing is read from the owners.
      if (req.method === 'HEAD') {
        res.end();
        return;
      }
      try {
        await result.write(res);
      } catch (err) {
        // The status is out: the only way left to say the body is incomplete is to cut the connection.
        res.destroy(err instanceof Error ? err : new Error(String(err)));
        throw err;
      }
      return;
    }
    const body = result instanceof RenderedJson ? Buffer.concat(result.chunks) : JSON.stringify(result);
    // One writeHead instead of res.json's content negotiation and per-header bookkeeping: this is the hot path.
    res
      .writeHead(spec.status ?? 200, {
        ...(spec.location ? { Location: spec.location(result) } : {}),
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
      })
      .end(body);
  };
}

/**
 * The caller's platform account (read without an organization: user ids are global, and the answer says which
 * organization the user belongs to); refused (403) when the token names none or the account is inactive.
 */
async function loadAccount(caller: Caller, deps: V1Deps, call: CallSettings): Promise<Account> {
  if (!caller.userId) throw new HttpProblem(403, 'The token does not identify a platform user');
  // A failed read goes to the error handler as the gRPC error it is: answered by the status table, and logged there.
  const user = await deps.accounts.load(caller.userId, call);
  // Every credential of an organization being offboarded is refused, as if it had expired (CONTRACT §8).
  if (user?.organizationSuspended) throw invalidToken();
  // An unknown, deleted or malformed user id in a token means there is no account to act for.
  if (!user?.active) throw new HttpProblem(403, 'The account is not active');
  // Every account belongs to one; a record without one cannot be acted for.
  if (!(user.organizationId > 0)) throw new HttpProblem(403, 'The account belongs to no organization');
  return { caller: { ...caller, userId: caller.userId }, user };
}
