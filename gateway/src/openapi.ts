import { SCIM_SECRET_TOKEN, USER_ID_PATTERN } from '@mileage/runtime/formats';
import { WEBHOOK_EVENT_TYPES } from '@mileage/runtime/outbox';
/**
 * The OpenAPI 3.1 description of the External API, served at /openapi.json. Field names follow the public
 * reference API (CONTRACT §2); additions of this platform are marked "(+)". A contract test validates every
 * response the gateway's test suites receive against this document.
 */
import { CHANGE_FEED_PARAMETER } from './drive-params';
import { V1_EXAMPLES } from './openapi-examples';
import { scimPaths, scimResponses, scimSchemas } from './openapi-scim';
import { V1_ROUTES } from './routes';
import { HOUR } from './rate-limit';
import { V1_SCOPES } from './scopes';
import { deprecationHeader, routeLimit, scopesOf, type RouteSpec } from './v1';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const nullable = (schema: object) => ({ oneOf: [schema, { type: 'null' }] });
const dateTime = { type: 'string', format: 'date-time' };

const HEADERS = {
  'X-RateLimit-Limit': {
    description: 'Requests allowed per minute on this route for this caller.',
    schema: { type: 'integer' },
    example: 30,
  },
  'X-RateLimit-Remaining': {
    description: 'Requests left in the current window.',
    schema: { type: 'integer' },
    example: 29,
  },
  'X-RateLimit-Reset': {
    description: 'When the window resets (epoch seconds).',
    schema: { type: 'integer' },
    example: 1795425605,
  },
  'RateLimit-Policy': {
    description: '(+) IETF draft field.',
    schema: { type: 'string' },
    example: '"per-minute";q=30;w=60',
  },
  RateLimit: { description: '(+) IETF draft field.', schema: { type: 'string' }, example: '"per-minute";r=29;t=42' },
  'X-Request-Id': {
    description: 'The request id (echoed when the client sent an acceptable one); logs and traces carry it.',
    schema: { type: 'string' },
    example: '1e3a4f4a-35e8-4bc6-860d-d02681da4a24',
  },
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' }, example: 42 },
};
const header = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });
const rateLimitHeaders = {
  'X-RateLimit-Limit': header('X-RateLimit-Limit'),
  'X-RateLimit-Remaining': header('X-RateLimit-Remaining'),
  'X-RateLimit-Reset': header('X-RateLimit-Reset'),
  'RateLimit-Policy': header('RateLimit-Policy'),
  RateLimit: header('RateLimit'),
  'X-Request-Id': header('X-Request-Id'),
};
const responseRef = (name: string) => ({ $ref: `#/components/responses/${name}` });

const problem = (description: string, example: object, headers: Record<string, object> = {}) => ({
  description,
  headers: { 'X-Request-Id': header('X-Request-Id'), ...headers },
  content: { 'application/json': { schema: ref('Problem'), example } },
});

/** The /v1 error responses, described once (components.responses) and referenced by every route. */
const V1_ERROR_RESPONSES = {
  Unauthorized: problem(
    'Missing, malformed, expired or wrongly signed token, or wrong issuer or audience. Sign in (Authorize) and try again.',
    V1_EXAMPLES.unauthorized,
    {
      'WWW-Authenticate': {
        description: '`Bearer realm="mileage"`, with `error="invalid_token"` when a token was sent.',
        schema: { type: 'string' },
        example: 'Bearer realm="mileage", error="invalid_token"',
      },
    },
  ),
  Forbidden: {
    description:
      'The token lacks the route’s scope (with `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`), names no active platform user, or the data belongs to someone else (also a group id that does not exist: no existence oracle).',
    headers: {
      'X-Request-Id': header('X-Request-Id'),
      'WWW-Authenticate': {
        description: 'Only for a missing scope.',
        schema: { type: 'string' },
        example: 'Bearer realm="mileage", error="insufficient_scope", scope="groups_read"',
      },
    },
    content: {
      'application/json': {
        schema: ref('Problem'),
        examples: {
          insufficient_scope: { summary: 'The token lacks the scope', value: V1_EXAMPLES.forbidden },
          not_yours: { summary: 'Another user’s data', value: V1_EXAMPLES.forbiddenOwnership },
        },
      },
    },
  },
  ValidationFailed: {
    description: 'A malformed or out-of-range parameter; `loc` says which (FastAPI’s HTTPValidationError shape).',
    headers: rateLimitHeaders,
    content: { 'application/json': { schema: ref('HTTPValidationError'), example: V1_EXAMPLES.validation } },
  },
  TooManyRequests: problem('The route’s per-minute limit for this caller is used up.', V1_EXAMPLES.tooManyRequests, {
    ...rateLimitHeaders,
    'Retry-After': header('Retry-After'),
  }),
  ServiceUnavailable: problem(
    '(+) A backing service, the rate limiter or the identity provider is unavailable; retry after `Retry-After`.',
    V1_EXAMPLES.unavailable,
    { 'Retry-After': header('Retry-After') },
  ),
  GatewayTimeout: problem('(+) A backing service did not answer in time.', V1_EXAMPLES.timeout),
  ResyncRequired: problem(
    '(+) With `include_deleted=true`: the sync’s lower bound (`date_after` or `modified_after`, also inside a `cursor`) is older than the tombstone retention (90 days by default), so deletions since then may have been purged. With any `cursor`: the database was restored to a point in time before the cursor was read (CONTRACT §8), so what it continued from may be gone. `type` is `/errors/resync-required`: start a full sync (list without `cursor` and `date_after`, replace the local copy) and continue incrementally from its newest `modified`.',
    V1_EXAMPLES.resyncRequired,
  ),
  // Node.js's HTTP server answers this itself, before any route, so it carries no body (schemathesis found it).
  HeadersTooLarge: {
    description:
      'The request line and headers together exceed 16 KB (e.g. a very long query string): refused by the HTTP server before any route, with an empty body.',
  },
};

const errorResponses = {
  '401': responseRef('Unauthorized'),
  '403': responseRef('Forbidden'),
  '422': responseRef('ValidationFailed'),
  '429': responseRef('TooManyRequests'),
  '431': responseRef('HeadersTooLarge'),
  '503': responseRef('ServiceUnavailable'),
  '504': responseRef('GatewayTimeout'),
};

const notFound = problem('(+) The group has no such webhook or delivery (asked by one of its admins).', {
  detail: 'webhook subscription not found',
  type: 'about:blank',
  title: 'Not Found',
  status: 404,
});

const WEBHOOK_EXAMPLE = {
  id: '0f8d3c52-8a39-4f0e-9a65-3f3a4f1c2b7e',
  url: 'https://payroll.example.com/hooks/mileage',
  events: ['drive.reported', 'drive.deleted'],
  status: 'active',
  disabled_reason: null,
  disabled_at: null,
  failure_run: 0,
  created: '2026-11-23T12:00:00.000Z',
};
const DELIVERY_EXAMPLE = {
  id: '42',
  event_id: '6a1f0c1e-54f3-4c1d-9f44-0f3e1b2a9c10',
  event_type: 'drive.reported',
  status: 'succeeded',
  attempts: 1,
  created: '2026-11-23T12:05:00.120Z',
  next_attempt_at: null,
  last_attempt_at: '2026-11-23T12:05:00.180Z',
  last_status_code: 204,
  last_error: null,
  last_latency_ms: 37,
  delivered_at: '2026-11-23T12:05:00.217Z',
};
/** The prose of one /v1 operation (keyed by its route id); everything else in it comes from the RouteSpec. */
interface OperationDoc {
  operationId: string;
  summary: string;
  description?: string;
  /** Who may call it, said after the scope and the limit. */
  access?: string;
  /** The success response; a change feed also shows a page with tombstones, JSON Lines each kind of line. */
  success: {
    description: string;
    example?: object | string;
    feedExample?: object;
    lineExamples?: Record<string, object>;
    /** Headers of the success answer beyond the rate limit's. */
    headers?: Record<string, object>;
  };
  requestExample?: object;
  /** Responses only the route's prose knows of. */
  responses?: Record<string, object>;
}

const WEBHOOK_ACCESS = 'Admins of the group only (403 otherwise, also for a group that does not exist).';

const V1_OPERATIONS: Record<string, OperationDoc> = {
  'users.me': {
    operationId: 'getMe',
    summary: 'The caller’s profile',
    success: { description: 'The caller.', example: V1_EXAMPLES.user },
  },
  'users.me.export': {
    operationId: 'exportMe',
    summary: '(+) A person’s own copy: the caller’s profile and every drive of theirs',
    description:
      'JSON Lines (`application/x-ndjson`), streamed as it is read: the first line `{"user": {…}}`, then one `{"drive": {…}}` per drive of the caller, every classification, first recorded first. One consistent copy: a drive changed while the copy is read is in it once; drives recorded after the request began are not. A connection that breaks leaves a body whose last line is incomplete or missing: ask again.',
    success: {
      description: 'The copy, one JSON document a line.',
      lineExamples: {
        user: { summary: 'The first line: the caller', value: { user: V1_EXAMPLES.user } },
        drive: { summary: 'Every further line: one drive', value: { drive: V1_EXAMPLES.drives.results[0]! } },
      },
    },
  },
  'users.get': {
    operationId: 'getUser',
    summary: 'A user’s profile (the caller’s own id only)',
    description: 'Another user’s id is 403.',
    success: { description: 'The user.', example: V1_EXAMPLES.user },
  },
  'drives.user': {
    operationId: 'getUserDrives',
    summary: 'The caller’s drives',
    success: {
      description:
        'One page, most recent first on the filter field (modified by default), ties by drive id descending.',
      example: V1_EXAMPLES.drives,
      feedExample: V1_EXAMPLES.drivesWithDeleted,
    },
  },
  'groups.list': {
    operationId: 'getGroups',
    summary: 'The groups the caller administers',
    success: { description: 'The groups.', example: V1_EXAMPLES.groups },
  },
  'groups.get': {
    operationId: 'getGroup',
    summary: 'One group (its admins only)',
    success: { description: 'The group as the only resource.', example: V1_EXAMPLES.groups },
  },
  'drives.group-reported': {
    operationId: 'getGroupReportedDrives',
    summary: 'The drives reported to a group (its admins only)',
    success: {
      description: 'One page, most recent first.',
      example: V1_EXAMPLES.reportedDrives,
      feedExample: V1_EXAMPLES.reportedDrivesWithDeleted,
    },
  },
  'drives.all-reported': {
    operationId: 'getReportedDrives',
    summary: 'The drives reported to every group the caller administers (alpha)',
    description: 'Kept for existing integrations; use /v1/groups/{group_id}/reported-drives.',
    success: {
      description: 'One page, most recent first.',
      example: V1_EXAMPLES.reportedDrives,
      feedExample: V1_EXAMPLES.reportedDrivesWithDeleted,
    },
  },
  'webhooks.list': {
    operationId: 'listGroupWebhooks',
    summary: '(+) The webhooks of a group',
    description: 'Every webhook of the group, oldest first, without secrets.',
    access: WEBHOOK_ACCESS,
    success: { description: 'The webhooks.', example: { results: [WEBHOOK_EXAMPLE] } },
    responses: { '404': notFound },
  },
  'webhooks.create': {
    operationId: 'createGroupWebhook',
    summary: '(+) Subscribe a URL to the group’s events',
    description:
      'The target must be `https` (in production), a public address (private, loopback and link-local addresses are refused unless the deployment allows them) and is checked again at every delivery. The response carries the signing `secret` (`whsec_…`), **shown only here**. At most 10 webhooks per group; a URL once per group (409). Deliveries: Standard Webhooks format, at least once, retried with backoff for at least 24 h (docs/webhooks.md).',
    access: WEBHOOK_ACCESS,
    requestExample: { url: WEBHOOK_EXAMPLE.url, events: WEBHOOK_EXAMPLE.events },
    success: {
      description: 'The webhook, with its secret (shown only now).',
      example: { ...WEBHOOK_EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
    },
    responses: {
      '404': notFound,
      '409': problem('(+) The group already has this URL, or its maximum of 10 webhooks.', {
        detail: 'the group already has a webhook for this URL',
        type: 'about:blank',
        title: 'Conflict',
        status: 409,
      }),
    },
  },
  'webhooks.delete': {
    operationId: 'deleteGroupWebhook',
    summary: '(+) Remove a webhook',
    description: 'Removes the webhook and its delivery log; pending deliveries are not sent.',
    access: WEBHOOK_ACCESS,
    success: { description: 'Removed.' },
    responses: { '404': notFound },
  },
  'webhooks.deliveries': {
    operationId: 'listWebhookDeliveries',
    summary: '(+) A webhook’s delivery log',
    description:
      'Deliveries of the webhook, newest first: one per event, with its attempts, the last response’s status code and latency, and when it is tried next. Kept 30 days after they finish.',
    access: WEBHOOK_ACCESS,
    success: { description: 'The newest deliveries.', example: { results: [DELIVERY_EXAMPLE], has_more: false } },
    responses: { '404': notFound },
  },
  'webhooks.redeliver': {
    operationId: 'redeliverWebhookDelivery',
    summary: '(+) Send a delivery again',
    description:
      'Makes the delivery due at once (same `webhook-id`), retried again for up to 24 h if it fails; a webhook disabled after a run of failures is enabled again.',
    access: WEBHOOK_ACCESS,
    success: {
      description: 'The delivery, pending.',
      example: { ...DELIVERY_EXAMPLE, status: 'pending', next_attempt_at: '2026-11-23T13:00:00.000Z' },
    },
    responses: { '404': notFound },
  },
};

const ORGANIZATION_ACCESS =
  'Administrators of the caller’s organization only (403 otherwise); everything acts inside that organization.';
const SCIM_TOKEN_EXAMPLE = {
  id: '5b0c2e43-7d1a-4c8e-9f3b-2a6d8e1f4c70',
  name: 'Entra ID production',
  created_at: '2026-11-25T09:00:00.000Z',
  expires_at: '2027-11-25T00:00:00.000Z',
  last_used_at: '2026-11-25T09:40:12.000Z',
};
const scimTokenNotFound = problem('(+) The organization has no such active SCIM token.', {
  detail: 'Not found',
  type: 'about:blank',
  title: 'Not Found',
  status: 404,
});

const EXPORT_EXAMPLE = {
  id: '5b0f6c2e-8d4a-4f1e-9a7b-3c2d1e0f9a8b',
  status: 'completed',
  requested_at: '2026-11-28T09:00:00.000Z',
  completed_at: '2026-11-28T09:03:12.000Z',
  expires_at: '2026-12-05T09:03:12.000Z',
  progress: { phase: 'done', rows: 1_180_412 },
  size_bytes: 73_400_320,
  sha256: '9f2b4c8e1d7a6f3b5c0e2d4a8b6c1f9e7d3a5b2c4e6f8a0b1c3d5e7f9a2b4c6d',
  failure_reason: null,
};
const EXPORT_RUNNING_EXAMPLE = {
  ...EXPORT_EXAMPLE,
  status: 'running',
  completed_at: null,
  expires_at: null,
  progress: { phase: 'users', rows: 40_000 },
  size_bytes: null,
  sha256: null,
};
const text = (description: string) => ({ description, schema: { type: 'string' } });

const ORGANIZATION_OPERATIONS: Record<string, OperationDoc> = {
  'organization.exports.create': {
    operationId: 'requestExport',
    summary: '(+) Export the organization’s data',
    description:
      'Starts an export of the organization (no body): a job writes a tar.gz archive with `manifest.json` and JSON Lines files (users, SCIM tokens without secrets, the provisioning trail, …), each owner’s part from one consistent snapshot. Follow it at the `Location` until `completed`, then download its archive within 7 days. One export at a time: while one is queued or running, another is 409 with `type` `/errors/export-running`. Recorded in the provisioning trail.',
    access: ORGANIZATION_ACCESS,
    success: {
      description: 'Accepted: the export is queued.',
      example: { id: EXPORT_EXAMPLE.id, status: 'queued', requested_at: EXPORT_EXAMPLE.requested_at },
      headers: { Location: text('The export: `/v1/organization/exports/{export_id}`.') },
    },
    responses: {
      '409': problem('An export of the organization is already queued or running.', {
        detail: 'an export of the organization is already queued or running',
        type: '/errors/export-running',
        title: 'Conflict',
        status: 409,
      }),
    },
  },
  'organization.exports.list': {
    operationId: 'listExports',
    summary: '(+) The organization’s exports',
    description: 'Newest first, every status; an expired export’s archive is gone.',
    access: ORGANIZATION_ACCESS,
    success: { description: 'The exports.', example: { results: [EXPORT_RUNNING_EXAMPLE, EXPORT_EXAMPLE] } },
  },
  'organization.exports.get': {
    operationId: 'getExport',
    summary: '(+) One export: status and progress',
    description:
      '`status` goes `queued` → `running` → `completed` (or `failed`, with `failure_reason`: request a new one), and `expired` 7 days after completion. `progress` names the phase and the rows written so far. Another organization’s export is 404.',
    access: ORGANIZATION_ACCESS,
    success: { description: 'The export.', example: EXPORT_EXAMPLE },
    responses: {
      '404': problem('No such export in the organization (another organization’s export is 404 too).', {
        detail: 'export not found',
        type: 'about:blank',
        title: 'Not Found',
        status: 404,
      }),
    },
  },
  'organization.exports.archive': {
    operationId: 'downloadExport',
    summary: '(+) Download an export’s archive',
    description:
      'The tar.gz (`application/gzip`), streamed. `ETag` is its SHA-256 (as `sha256` and the manifest name it); `Accept-Ranges: bytes`: a broken download resumes with `Range: bytes=<received>-` (206 with `Content-Range`); a range past the end is 416. Not completed yet: 409; past `expires_at`: 410. Every download is recorded in the provisioning trail.',
    access: ORGANIZATION_ACCESS,
    success: {
      description: 'The archive, or (206) the range of it asked for.',
      example: '<the tar.gz bytes>',
      headers: {
        ETag: text('`"<sha256>"`: the archive’s SHA-256.'),
        'Accept-Ranges': text('`bytes`.'),
        'Content-Range': text('With 206: `bytes <start>-<end>/<size>`.'),
      },
    },
    responses: {
      '206': { description: 'The range asked for (`Content-Range`).' },
      '404': problem('No such export in the organization (another organization’s export is 404 too).', {
        detail: 'export not found',
        type: 'about:blank',
        title: 'Not Found',
        status: 404,
      }),
      '409': problem('The export is not completed yet.', {
        detail: 'The export is running: its archive can be downloaded once it is completed',
        type: 'about:blank',
        title: 'Conflict',
        status: 409,
      }),
      '410': problem('The archive expired (7 days after completion) and was deleted.', {
        detail: 'The archive expired at 2026-12-05T09:03:12.000Z and was deleted',
        type: 'about:blank',
        title: 'Gone',
        status: 410,
      }),
      '416': problem('The range lies outside the archive (`Content-Range: bytes */<size>`).', {
        detail: "The range lies outside the archive's 73400320 bytes",
        type: 'about:blank',
        title: 'Range Not Satisfiable',
        status: 416,
      }),
    },
  },
  'organization.scim-tokens.list': {
    operationId: 'listScimTokens',
    summary: '(+) The organization’s active SCIM secret tokens',
    description:
      'Unrevoked, unexpired tokens, newest first, without their secrets (only their SHA-256 is stored). `last_used_at` is recorded at most once a minute.',
    access: ORGANIZATION_ACCESS,
    success: { description: 'The tokens.', example: { results: [SCIM_TOKEN_EXAMPLE] } },
  },
  'organization.scim-tokens.create': {
    operationId: 'createScimToken',
    summary: '(+) Mint a SCIM secret token',
    description:
      'A long-lived bearer secret for `/scim/v2` (what Entra ID’s non-gallery apps and many Okta setups need: `Authorization: Bearer mscim_…`), acting inside the caller’s organization. `token` is **shown only in this response**. Several tokens may be active at once (rotate with overlap: create the new one, switch the identity provider, revoke the old one); at most 20 active per organization (past that: 422). Optional `expires_at` (RFC 3339, in the future). Creation is recorded in the provisioning trail.',
    access: ORGANIZATION_ACCESS,
    requestExample: { name: SCIM_TOKEN_EXAMPLE.name, expires_at: SCIM_TOKEN_EXAMPLE.expires_at },
    success: {
      description: 'The token with its secret (shown only now).',
      example: {
        id: SCIM_TOKEN_EXAMPLE.id,
        name: SCIM_TOKEN_EXAMPLE.name,
        token: 'mscim_q3J8v0W1nX4yZ2bT6cR9dF5gH7jK1lM3nP5rS8tU0vA',
        created_at: SCIM_TOKEN_EXAMPLE.created_at,
        expires_at: SCIM_TOKEN_EXAMPLE.expires_at,
      },
    },
  },
  'organization.scim-tokens.revoke': {
    operationId: 'revokeScimToken',
    summary: '(+) Revoke a SCIM secret token',
    description:
      'Refused from the very next request on, on every gateway replica: the 204 comes after every replica has been told. Recorded in the provisioning trail.',
    access: ORGANIZATION_ACCESS,
    success: { description: 'Revoked.' },
    responses: { '404': scimTokenNotFound },
  },
  'organization.provisioning-events': {
    operationId: 'listProvisioningEvents',
    summary: '(+) The organization’s provisioning trail',
    description:
      'Every SCIM write (users, groups) and every SCIM token creation and revocation of the organization, newest first: when, which credential (an OAuth client id, or `scim_token:<id>`), what, on which resource, the request id. Paged with `next_cursor`.',
    access: ORGANIZATION_ACCESS,
    success: {
      description: 'One page, newest first.',
      example: {
        results: [
          {
            id: 'users-17',
            at: '2026-11-25T09:40:12.000Z',
            credential: `scim_token:${SCIM_TOKEN_EXAMPLE.id}`,
            action: 'patch',
            resource_type: 'User',
            resource_id: 'BobDriver1',
            outcome: 'succeeded',
            request_id: '3f1c9a4e-2b7d-4e8a-9c61-5d0e7f2a1b34',
          },
        ],
        has_more: true,
        next_cursor: 'eyJ2IjoxfQ.c2lnbmF0dXJl',
      },
    },
  },
};

/** The /v1 paths: method, scope, limit, parameters, body and responses from each RouteSpec, prose from V1_OPERATIONS. */
function v1Paths(routes: readonly RouteSpec<unknown>[]) {
  const paths: Record<string, Record<string, object>> = {};
  for (const spec of routes) {
    const doc = V1_OPERATIONS[spec.id] ?? ORGANIZATION_OPERATIONS[spec.id];
    if (!doc) throw new Error(`the route ${spec.id} has no prose in V1_OPERATIONS`);
    (paths[spec.path] ??= {})[spec.method] = v1Operation(spec, doc);
  }
  return paths;
}

function v1Operation(spec: RouteSpec<unknown>, doc: OperationDoc) {
  const inTemplate = [...spec.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]);
  const declared = spec.parameters.filter((p) => p.in === 'path').map((p) => p.name);
  if (inTemplate.join() !== declared.join())
    throw new Error(`the route ${spec.id} declares the path parameters [${declared}], its path has [${inTemplate}]`);
  const { requests, windowSeconds } = routeLimit(spec);
  const per = windowSeconds === HOUR ? 'hour' : 'minute';
  const scopes = scopesOf(spec);
  const scopeText = scopes.map((scope) => `\`${scope}\``).join(' and ');
  const limits = `**Scope${scopes.length > 1 ? 's' : ''}** ${scopeText} · **Rate limit** ${requests} requests per ${per} per caller (this route).`;
  const body = spec.body;
  const since = spec.deprecatedSince;
  const description = since
    ? `${doc.description ?? ''} Responses carry \`Deprecation: ${deprecationHeader(since)}\` (RFC 9745: deprecated since ${since.slice(0, 10)}) and a \`Link\` with \`rel="deprecation"\`.`.trim()
    : doc.description;
  return {
    tags: ['External API'],
    operationId: doc.operationId,
    summary: doc.summary,
    description: [description, doc.access ? `${limits} ${doc.access}` : limits].filter(Boolean).join('\n\n'),
    ...(since ? { deprecated: true } : {}),
    security: [{ oauth2: [...scopesOf(spec)] }],
    parameters: spec.parameters,
    ...(body
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: ref(body.schema), example: doc.requestExample } },
          },
        }
      : {}),
    responses: {
      [String(spec.status ?? 200)]: successResponse(spec, doc),
      ...errorResponses,
      ...doc.responses,
      ...(spec.parameters.some((p) => p.name === CHANGE_FEED_PARAMETER)
        ? { '410': responseRef('ResyncRequired') }
        : {}),
      ...(body
        ? {
            '413': problem(`The body is larger than ${body.limitBytes / 1024} KB.`, {
              detail: `Request body larger than ${body.limitBytes} bytes`,
              type: 'about:blank',
              title: 'Payload Too Large',
              status: 413,
            }),
          }
        : {}),
    },
  };
}

function successResponse(spec: RouteSpec<unknown>, doc: OperationDoc) {
  const { description, example, feedExample, lineExamples } = doc.success;
  const headers = { ...rateLimitHeaders, ...doc.success.headers };
  if (spec.status === 204) return { description, headers };
  if (!spec.response) throw new Error(`the route ${spec.id} names no response schema`);
  const examples = lineExamples
    ? { examples: lineExamples }
    : feedExample
      ? {
          examples: {
            page: { summary: 'A page', value: example },
            change_feed: {
              summary: '(+) With include_deleted=true: a tombstone before a live item',
              value: feedExample,
            },
          },
        }
      : { example };
  return {
    description,
    headers,
    content: { [spec.responseType ?? 'application/json']: { schema: ref(spec.response), ...examples } },
  };
}

function webhookSchemas() {
  const eventType = {
    type: 'string',
    enum: [...WEBHOOK_EVENT_TYPES],
  };
  const webhookProperties = {
    id: { type: 'string', format: 'uuid' },
    url: { type: 'string' },
    events: { type: 'array', items: eventType },
    status: { type: 'string', enum: ['active', 'disabled'] },
    disabled_reason: { type: ['string', 'null'] },
    disabled_at: { type: ['string', 'null'], format: 'date-time' },
    failure_run: { type: 'integer', minimum: 0, description: 'Failed attempts in a row (reset by a success).' },
    created: dateTime,
  };
  const webhookRequired = Object.keys(webhookProperties);
  return {
    WebhookCreateRequest: {
      type: 'object',
      required: ['url', 'events'],
      properties: {
        url: { type: 'string', minLength: 1, maxLength: 2048, description: 'https URL (http only in development).' },
        events: { type: 'array', minItems: 1, uniqueItems: true, items: eventType },
      },
    },
    Webhook: { type: 'object', required: webhookRequired, properties: webhookProperties },
    WebhookCreated: {
      type: 'object',
      required: [...webhookRequired, 'secret'],
      properties: {
        ...webhookProperties,
        secret: { type: 'string', pattern: '^whsec_', description: 'The signing secret, shown only in this response.' },
      },
    },
    WebhookListResponse: {
      type: 'object',
      required: ['results'],
      properties: { results: { type: 'array', items: ref('Webhook') } },
    },
    Delivery: {
      type: 'object',
      required: [
        'id',
        'event_id',
        'event_type',
        'status',
        'attempts',
        'created',
        'next_attempt_at',
        'last_attempt_at',
        'last_status_code',
        'last_error',
        'last_latency_ms',
        'delivered_at',
      ],
      properties: {
        id: { type: 'string', pattern: '^[1-9][0-9]*$' },
        event_id: { type: 'string', format: 'uuid', description: 'The `webhook-id` of every attempt.' },
        event_type: eventType,
        status: { type: 'string', enum: ['pending', 'succeeded', 'failed'] },
        attempts: { type: 'integer', minimum: 0 },
        created: dateTime,
        next_attempt_at: { type: ['string', 'null'], format: 'date-time' },
        last_attempt_at: { type: ['string', 'null'], format: 'date-time' },
        last_status_code: { type: ['integer', 'null'] },
        last_error: { type: ['string', 'null'] },
        last_latency_ms: { type: ['integer', 'null'] },
        delivered_at: { type: ['string', 'null'], format: 'date-time' },
      },
    },
    DeliveryListResponse: {
      type: 'object',
      required: ['results', 'has_more'],
      properties: { results: { type: 'array', items: ref('Delivery') }, has_more: { type: 'boolean' } },
    },
  };
}

function organizationSchemas() {
  const tokenProperties = {
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string', minLength: 1, maxLength: 200 },
    created_at: dateTime,
    expires_at: { type: ['string', 'null'], format: 'date-time', description: 'Null: never expires.' },
  };
  return {
    ScimTokenCreateRequest: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { ...tokenProperties.name, description: 'What the admin recognises it by, e.g. the identity provider.' },
        expires_at: { ...tokenProperties.expires_at, description: 'RFC 3339, in the future; absent or null: never.' },
      },
    },
    ScimTokenCreated: {
      type: 'object',
      required: ['id', 'name', 'token', 'created_at', 'expires_at'],
      properties: {
        ...tokenProperties,
        token: {
          type: 'string',
          pattern: SCIM_SECRET_TOKEN.source,
          description: 'The secret (256 random bits), shown only in this response: `Authorization: Bearer <token>`.',
        },
      },
    },
    ScimToken: {
      type: 'object',
      required: ['id', 'name', 'created_at', 'expires_at', 'last_used_at'],
      properties: {
        ...tokenProperties,
        last_used_at: { type: ['string', 'null'], format: 'date-time', description: 'Null: never used.' },
      },
    },
    ScimTokenListResponse: {
      type: 'object',
      required: ['results'],
      properties: { results: { type: 'array', items: ref('ScimToken') } },
    },
    ProvisioningEvent: {
      type: 'object',
      required: ['id', 'at', 'credential', 'action', 'resource_type', 'resource_id', 'outcome', 'request_id'],
      properties: {
        id: { type: 'string', description: 'Unique within the trail, e.g. `users-17`.' },
        at: dateTime,
        credential: {
          type: 'string',
          description:
            'The OAuth client id of a client-credentials token, or `scim_token:<id>` for a SCIM secret token (`user:<id>` for a token created or revoked by an admin).',
        },
        action: {
          type: 'string',
          description:
            '`create`, `replace`, `patch`, `delete`; for SCIM tokens `create`, `revoke`; for exports `export`, `download`, `expire`.',
        },
        resource_type: { type: 'string', description: '`User`, `Group`, `ScimToken` or `Export`.' },
        resource_id: { type: 'string' },
        outcome: { type: 'string', enum: ['succeeded'], description: 'The trail records the writes that happened.' },
        request_id: { type: 'string', description: 'The `X-Request-Id` of the request that did it.' },
      },
    },
    ExportAccepted: {
      type: 'object',
      required: ['id', 'status', 'requested_at'],
      properties: { id: { type: 'string', format: 'uuid' }, status: { type: 'string' }, requested_at: dateTime },
    },
    ExportSchema: {
      type: 'object',
      required: [
        'id',
        'status',
        'requested_at',
        'completed_at',
        'expires_at',
        'progress',
        'size_bytes',
        'sha256',
        'failure_reason',
      ],
      properties: {
        id: { type: 'string', format: 'uuid' },
        status: { type: 'string', enum: ['queued', 'running', 'completed', 'failed', 'expired'] },
        requested_at: dateTime,
        completed_at: { type: ['string', 'null'], format: 'date-time' },
        expires_at: { type: ['string', 'null'], format: 'date-time', description: '7 days after completion.' },
        progress: {
          type: 'object',
          required: ['phase', 'rows'],
          properties: { phase: { type: 'string' }, rows: { type: 'integer', minimum: 0 } },
        },
        size_bytes: { type: ['integer', 'null'], description: 'The archive’s size, once completed.' },
        sha256: { type: ['string', 'null'], description: 'The archive’s SHA-256 (hex), once completed.' },
        failure_reason: { type: ['string', 'null'], description: '(+) Why a failed export failed.' },
      },
    },
    ExportListResponse: {
      type: 'object',
      required: ['results'],
      properties: { results: { type: 'array', items: ref('ExportSchema') } },
    },
    ExportArchive: { type: 'string', format: 'binary', description: 'A tar.gz archive (or a range of it).' },
    ProvisioningEventListResponse: {
      type: 'object',
      required: ['results', 'has_more', 'next_cursor'],
      properties: {
        results: { type: 'array', items: ref('ProvisioningEvent') },
        has_more: { type: 'boolean' },
        next_cursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last.' },
      },
    },
  };
}

const money = nullable({
  type: 'object',
  required: ['amount', 'currency'],
  properties: {
    amount: { type: 'integer', description: 'In the currency’s smallest unit.' },
    currency: { type: 'string', enum: ['USD', 'CAD', 'GBP'] },
  },
});
const driveDetailProperties = {
  distance: nullable({
    type: 'object',
    required: ['amount', 'units'],
    properties: {
      amount: { type: 'number' },
      units: { type: 'string', enum: ['mi', 'km'] },
      discounted: { type: ['integer', 'null'] },
    },
  }),
  value: money,
  toll_fees: money,
  parking_fees: money,
  description: { type: ['string', 'null'], description: 'The driver’s notes.' },
  entry: { type: 'string', enum: ['manual', 'automatic'] },
  classification: { type: ['string', 'null'], enum: ['business', 'personal', 'unclassified', null] },
  purpose: { type: ['string', 'null'] },
  start: nullable(ref('Geolocation')),
  end: nullable(ref('Geolocation')),
};
const detailKeys = Object.keys(driveDetailProperties);

/** (+) A deleted item of a change feed (`include_deleted=true`): its id, `deleted` and when. */
const tombstone = (description: string, id: Record<string, object>, when: string, example: object) => ({
  type: 'object',
  description,
  required: [...Object.keys(id), 'deleted', 'modified'],
  additionalProperties: false,
  properties: { ...id, deleted: { const: true }, modified: { ...dateTime, description: when } },
  example,
});

/** A page of a drive list: its items, with `include_deleted=true` (+) also tombstones. */
const feedPage = (items: string, item: string, deleted: string, nextCursor: object) => ({
  type: 'object',
  required: ['results', 'has_more', 'next_cursor'],
  properties: {
    results: {
      type: 'array',
      description: `${items}; with \`include_deleted=true\` (+) also tombstones, in the same order.`,
      items: { oneOf: [ref(item), ref(deleted)] },
    },
    has_more: { type: 'boolean' },
    next_cursor: nextCursor,
  },
});

/** `routes` is for tests that change a route and see the document follow. */
export function openApiDocument(options: { issuer: string; routes?: readonly RouteSpec<unknown>[] }) {
  const oidc = `${options.issuer.replace(/\/$/, '')}/protocol/openid-connect`;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Mileage Platform External API',
      version: '2.0.0',
      description: [
        'Read-only access to user profiles, teams, drives and the drives reported to a team (`/v1`), and SCIM 2.0 provisioning of users and team membership (`/scim/v2`). OAuth 2.1 bearer tokens from the realm `mileage`.',
        '',
        '**Try it from this page:** press **Authorize**, keep the scopes you need, and sign in with your account (in development: `alice@example.com`, password `demo`). The page is a public client of the realm (`mileage-docs`: authorization code with PKCE S256, its redirect URI `/docs/oauth2-redirect.html`), so no secret is involved; then **Execute** on any `/v1` route calls the API with your token.',
        '',
        '**Rate limits** are per caller, per route, per minute (each route says its own), shared by every gateway replica; every response carries `X-RateLimit-*` and `RateLimit` headers, a 429 also `Retry-After`. **Errors** (401, 403, 422, 429, 503, 504) have one shape each, described under *Schemas* and *Responses*; every response carries `X-Request-Id`.',
        '',
        '**Webhooks (+)**: group admins subscribe a URL to events (`drive.reported`, `drive.report_updated`, `drive.report_withdrawn`, `drive.deleted`, `user.deactivated`) with scope `webhooks_manage`; deliveries are signed in the Standard Webhooks format (`webhook-id`, `webhook-timestamp`, `webhook-signature`), at least once, retried with backoff for at least 24 h (docs/webhooks.md).',
      ].join('\n'),
    },
    servers: [{ url: '/' }],
    security: [{ oauth2: [] }],
    tags: [
      {
        name: 'External API',
        description:
          'The read-only `/v1` API for integrations: the signed-in person’s profile and drives, the teams they administer and the drives reported to them. Each route needs one scope and has its own per-minute limit. Drive lists page with `next_cursor` (keyset: nothing skipped or repeated during a sync); (+) with `include_deleted=true` they are a change feed that also lists deleted drives and withdrawn reports as tombstones.',
      },
      {
        name: 'SCIM 2.0',
        description:
          'Provisioning (RFC 7643 / 7644) for identity providers such as Entra ID and Okta: users, team membership, discovery. **Provisioning is a machine, not a person:** it uses the client-credentials grant of the confidential client `mileage-scim` with scope `scim`, never a person’s login, so *Authorize* with your account gives no access here. To try SCIM from this page, get a token on a server (`curl -u mileage-scim:<secret> -d grant_type=client_credentials -d scope=scim <realm>/protocol/openid-connect/token`) and paste it under `scimToken`. (+) **Organizations:** every request acts inside the organization of its credential (the client’s `org_id` claim or configured binding, or a SCIM secret token `mscim_…` an organization admin minted with `POST /v1/organization/scim-tokens`); another organization’s users and groups are indistinguishable from ids that do not exist. 1,200 requests per minute per organization; bodies up to 1 MB.',
      },
    ],
    paths: { ...v1Paths(options.routes ?? V1_ROUTES), ...scimPaths() } as Record<string, Record<string, object>>,
    components: {
      securitySchemes: {
        oauth2: {
          type: 'oauth2',
          description:
            'A person’s token from the Keycloak realm `mileage`: integrations, and this page (client `mileage-docs`), use the authorization-code grant with PKCE (S256). A token carries the scopes its request asked for.',
          flows: {
            authorizationCode: {
              authorizationUrl: `${oidc}/auth`,
              tokenUrl: `${oidc}/token`,
              refreshUrl: `${oidc}/token`,
              scopes: V1_SCOPES,
            },
          },
        },
        scim: {
          type: 'oauth2',
          description:
            'The provisioning client `mileage-scim` (confidential) with the client-credentials grant and scope `scim`. Its secret belongs on a server or in the identity provider, not in a browser: the token endpoint refuses browsers for confidential clients.',
          flows: {
            clientCredentials: {
              tokenUrl: `${oidc}/token`,
              scopes: { scim: 'Provision users and group membership (SCIM 2.0)' },
            },
          },
        },
        scimToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A client-credentials token of a provisioning client (scope `scim`) obtained elsewhere, or (+) a SCIM secret token (`mscim_…`, from `POST /v1/organization/scim-tokens`), pasted here. Either acts inside the organization it is bound to.',
        },
      },
      headers: HEADERS,
      responses: { ...V1_ERROR_RESPONSES, ...scimResponses() },
      schemas: {
        UserId: { type: 'string', pattern: USER_ID_PATTERN.source },
        UserSchema: {
          type: 'object',
          required: ['id', 'userName', 'name', 'emails', 'active', 'displayName'],
          properties: {
            id: ref('UserId'),
            userName: { type: 'string' },
            name: {
              type: 'object',
              required: ['givenName', 'familyName', 'formatted'],
              properties: {
                givenName: { type: 'string' },
                familyName: { type: 'string' },
                formatted: { type: ['string', 'null'] },
              },
            },
            emails: {
              type: 'array',
              items: {
                type: 'object',
                required: ['value', 'type', 'primary'],
                properties: { value: { type: 'string' }, type: { type: 'string' }, primary: { type: 'boolean' } },
              },
            },
            active: { type: 'boolean', default: true },
            displayName: { type: ['string', 'null'] },
          },
        },
        Address: {
          type: 'object',
          required: ['country', 'state', 'city', 'street', 'postal_code'],
          properties: {
            country: { type: 'string' },
            state: { type: 'string' },
            city: { type: 'string' },
            street: { type: 'string' },
            postal_code: { type: 'string' },
          },
        },
        Geolocation: {
          type: 'object',
          required: ['name', 'lat', 'lon', 'time', 'address'],
          properties: {
            name: { type: 'string' },
            lat: { type: ['string', 'null'] },
            lon: { type: ['string', 'null'] },
            time: dateTime,
            address: nullable(ref('Address')),
          },
        },
        DriveSchema: {
          type: 'object',
          required: ['drive_id', 'created', 'modified', 'started_at', 'ended_at', ...detailKeys],
          properties: {
            drive_id: { type: 'integer', minimum: 1 },
            created: dateTime,
            modified: dateTime,
            started_at: dateTime,
            ended_at: dateTime,
            ...driveDetailProperties,
          },
        },
        DriveDetails: { type: 'object', required: detailKeys, properties: driveDetailProperties },
        PersonalCopyLine: {
          description: '(+) One line of a person’s own copy: the first is the user, every further one a drive.',
          oneOf: [
            {
              type: 'object',
              required: ['user'],
              additionalProperties: false,
              properties: { user: ref('UserSchema') },
            },
            {
              type: 'object',
              required: ['drive'],
              additionalProperties: false,
              properties: { drive: ref('DriveSchema') },
            },
          ],
        },
        DriveTombstone: tombstone(
          '(+) A deleted drive, only with `include_deleted=true`.',
          { drive_id: { type: 'integer', minimum: 1 } },
          'When the drive was deleted.',
          V1_EXAMPLES.drivesWithDeleted.results[0]!,
        ),
        GetDrivesResponse: feedPage('Drives', 'DriveSchema', 'DriveTombstone', {
          type: ['string', 'null'],
          description: '(+) Opaque; pass as `cursor` for the next page.',
        }),
        ReportedDriveSchema: {
          type: 'object',
          required: ['id', 'driver', 'details', 'created', 'modified', 'status', 'review_comments'],
          properties: {
            id: { type: 'string', pattern: '^[1-9][0-9]*$' },
            driver: {
              type: 'object',
              required: ['id', 'name', 'email', 'status', 'timezone_offset'],
              properties: {
                id: ref('UserId'),
                name: { type: ['string', 'null'] },
                email: { type: ['string', 'null'] },
                status: { type: 'string', enum: ['active', 'inactive'] },
                timezone_offset: { type: 'number' },
              },
            },
            details: ref('DriveDetails'),
            created: { ...dateTime, description: 'When the drive was reported.' },
            modified: { ...dateTime, description: 'The last review, else the report time.' },
            status: { type: 'string' },
            review_comments: {
              type: 'array',
              items: {
                type: 'object',
                required: ['id', 'text', 'created_at', 'user_email'],
                properties: {
                  id: { type: 'string' },
                  text: { type: 'string' },
                  created_at: dateTime,
                  user_email: { type: 'string' },
                },
              },
            },
          },
        },
        ReportedDriveTombstone: tombstone(
          '(+) A report withdrawn from the group, or a reported drive deleted, only with `include_deleted=true`.',
          { id: { type: 'string', pattern: '^[1-9][0-9]*$' } },
          'When the report was withdrawn or the drive deleted.',
          V1_EXAMPLES.reportedDrivesWithDeleted.results[0]!,
        ),
        GetReportedDrivesResponse: feedPage('Reported drives', 'ReportedDriveSchema', 'ReportedDriveTombstone', {
          type: ['string', 'null'],
        }),
        GroupSchema: {
          type: 'object',
          required: ['id', 'display_name', 'members', 'meta'],
          properties: {
            id: { type: 'string', pattern: '^[1-9][0-9]*$' },
            display_name: { type: 'string' },
            members: {
              type: 'array',
              items: {
                type: 'object',
                required: ['value', 'display', 'is_admin', 'is_driver'],
                properties: {
                  value: ref('UserId'),
                  display: { type: ['string', 'null'] },
                  is_admin: { type: 'boolean' },
                  is_driver: { type: 'boolean' },
                },
              },
            },
            meta: {
              type: 'object',
              required: ['resourceType', 'created', 'lastModified', 'location'],
              properties: {
                resourceType: { const: 'Group' },
                created: dateTime,
                lastModified: dateTime,
                location: { type: 'string', format: 'uri' },
              },
            },
          },
        },
        GroupListResponse: {
          type: 'object',
          required: ['resources'],
          properties: { resources: { type: 'array', items: ref('GroupSchema') } },
        },
        ...webhookSchemas(),
        ...organizationSchemas(),
        HTTPValidationError: {
          type: 'object',
          required: ['detail'],
          properties: { detail: { type: 'array', items: ref('ValidationError') } },
        },
        ValidationError: {
          type: 'object',
          required: ['loc', 'msg', 'type'],
          properties: {
            loc: { type: 'array', items: { type: ['string', 'integer'] } },
            msg: { type: 'string' },
            type: { type: 'string' },
          },
        },
        ...scimSchemas(),
        Problem: {
          type: 'object',
          description: 'FastAPI-style `detail` plus RFC 9457 members.',
          required: ['detail', 'type', 'title', 'status'],
          properties: {
            detail: { type: 'string' },
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
          },
        },
      },
    },
  };
}
