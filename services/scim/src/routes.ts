import type { scimV1 } from '@mileage/proto';
import { receivedEndUser, type CallContext, type SignedEndUser } from '@mileage/runtime/grpc';
import type { Attested } from './attested-actor';
import type { RequestContext, ScimDeps, ScimResponse } from './context';
import { Discovery } from './discovery';
import { ScimError, scimErrors } from './errors';
import { GroupHandlers } from './groups';
import { readJson } from './request-body';
import { rootSearch, searchContext } from './search';
import { UserHandlers } from './users';

type Route = (ctx: RequestContext, body: () => unknown, id: string | undefined) => Promise<ScimResponse> | ScimResponse;

/** A SCIM request, attested, to the handler of its endpoint and method. */
export type Dispatch = (
  request: scimV1.HandleRequestRequest,
  headers: Record<string, string>,
  call: CallContext,
  attested: Attested,
) => Promise<ScimResponse>;

/** The endpoints of /scim/v2: each resource's handlers (users, groups, discovery) by path and method. */
export function scimRoutes(deps: ScimDeps): Dispatch {
  const users = new UserHandlers(deps);
  const groups = new GroupHandlers(deps);
  const discovery = new Discovery(deps.baseUrl);
  const searchAll = rootSearch(users, groups);
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

  return dispatch;
}

/** The end-user context the call came with, as CallSettings for the owner calls it makes. */
function endUserOf(call: CallContext): { endUser?: SignedEndUser } {
  const endUser = receivedEndUser(call.metadata);
  return endUser ? { endUser } : {};
}
