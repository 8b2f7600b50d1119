import { scimV1 } from '@mileage/proto';
import type { CallContext, Handlers, ServiceRegistration } from '@mileage/runtime';
import type { RequestContext, ScimDeps, ScimResponse } from './context';
import { Discovery } from './discovery';
import { ScimError, scimErrorFromGrpc, scimErrors } from './errors';
import { GroupHandlers } from './groups';
import { UserHandlers } from './users';

export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';
const MAX_BODY = 1_048_576;

type Route = (ctx: RequestContext, body: () => unknown, id: string | undefined) => Promise<ScimResponse> | ScimResponse;

/** The SCIM 2.0 protocol layer behind /scim/v2; the gateway authenticates and forwards, this decides. */
export function createServer(deps: ScimDeps): ServiceRegistration {
  const users = new UserHandlers(deps);
  const groups = new GroupHandlers(deps);
  const discovery = new Discovery(deps.baseUrl);
  const ok = (body: unknown): ScimResponse => ({ status: 200, body });
  const groupsAreThePlatforms = () => {
    throw scimErrors.notImplemented('Groups are created and deleted by the platform; SCIM manages their name and members');
  };

  // Endpoint (case-insensitive) → method → handler; `id` is the path segment after the endpoint.
  const routes: Record<string, { collection: Record<string, Route>; item: Record<string, Route> }> = {
    users: {
      collection: { GET: (ctx) => users.list(ctx), POST: (ctx, body) => users.create(body(), ctx) },
      item: {
        GET: (ctx, _b, id) => users.get(id!, ctx),
        PUT: (ctx, body, id) => users.replace(id!, body(), ctx),
        PATCH: (ctx, body, id) => users.patch(id!, body(), ctx),
        DELETE: (ctx, _b, id) => users.delete(id!, ctx),
      },
    },
    groups: {
      collection: { GET: (ctx) => groups.list(ctx), POST: groupsAreThePlatforms },
      item: {
        GET: (ctx, _b, id) => groups.get(id!, ctx),
        PUT: (ctx, body, id) => groups.replace(id!, body(), ctx),
        PATCH: (ctx, body, id) => groups.patch(id!, body(), ctx),
        DELETE: groupsAreThePlatforms,
      },
    },
    serviceproviderconfig: { collection: { GET: () => ok(discovery.serviceProviderConfig()) }, item: {} },
    resourcetypes: { collection: { GET: () => ok(discovery.resourceTypes()) }, item: { GET: (_c, _b, id) => ok(discovery.resourceTypes(id)) } },
    schemas: { collection: { GET: () => ok(discovery.schemas()) }, item: { GET: (_c, _b, id) => ok(discovery.schemas(id)) } },
  };

  async function dispatch(request: scimV1.HandleRequestRequest, call: CallContext): Promise<ScimResponse> {
    const segments = request.path.split('/').filter(Boolean).map((s) => decodeURIComponent(s));
    const endpoint = routes[segments[0]?.toLowerCase() ?? ''];
    if (!endpoint || segments.length > 2) {
      if (['bulk', 'me'].includes(segments[0]?.toLowerCase() ?? '')) throw scimErrors.notImplemented(`/${segments[0]} is not supported`);
      throw scimErrors.notFound(`No endpoint ${request.path}`);
    }
    const table = segments.length === 2 ? endpoint.item : endpoint.collection;
    const method = request.method.toUpperCase() === 'HEAD' ? 'GET' : request.method.toUpperCase();
    const route = table[method];
    if (!route) throw new ScimError(405, `${request.method} is not allowed on ${request.path}`, undefined, { Allow: Object.keys(table).join(', ') });
    const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v]));
    const ctx: RequestContext = {
      actor: request.clientId || 'unknown-client',
      requestId: call.requestId,
      call: { requestId: call.requestId, ...(call.trace ? { trace: call.trace } : {}) },
      query: new URLSearchParams(request.query),
      headers,
    };
    const body = () => readJson(request.body, headers['content-type']);
    return route(ctx, body, segments[1]);
  }

  const handlers: Handlers<scimV1.ScimServiceServer> = {
    async handleRequest(request, callCtx) {
      let response: ScimResponse;
      try {
        response = await dispatch(request, callCtx);
      } catch (err) {
        const scimError = err instanceof ScimError ? err : scimErrorFromGrpc(err);
        // Anything else is a bug: the gRPC server logs it and answers INTERNAL without details.
        if (!scimError) throw err;
        response = { status: scimError.status, headers: scimError.headers, body: scimError.body() };
      }
      const payload = response.body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(response.body));
      return {
        status: response.status,
        headers: { ...(payload.length ? { 'Content-Type': SCIM_CONTENT_TYPE } : {}), ...(response.headers ?? {}) },
        body: payload,
      };
    },
  };
  return { definition: scimV1.ScimServiceService, handlers: handlers as ServiceRegistration['handlers'] };
}

/** Parses a JSON body sent as application/scim+json or application/json; anything else is refused. */
function readJson(body: Buffer, contentType: string | undefined): unknown {
  if (body.length > MAX_BODY) throw new ScimError(413, `The request body is larger than ${MAX_BODY} bytes`);
  if (contentType && !/^application\/(scim\+)?json\s*(;|$)/i.test(contentType)) {
    throw new ScimError(415, 'Send the body as application/scim+json (or application/json)');
  }
  if (body.length === 0) throw scimErrors.invalidSyntax('The request has no body');
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw scimErrors.invalidSyntax('The request body is not valid JSON');
  }
}
