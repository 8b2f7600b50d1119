import { USER_ID_PATTERN } from '@mileage/runtime';
/**
 * The OpenAPI 3.1 description of the External API, served at /openapi.json. Field names follow the public
 * reference API (CONTRACT §2); additions of this platform are marked "(+)". A contract test validates every
 * response the gateway's test suites receive against this document.
 */
import { scimPaths, scimSchemas } from './openapi-scim';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const nullable = (schema: object) => ({ oneOf: [schema, { type: 'null' }] });
const dateTime = { type: 'string', format: 'date-time' };
const V1_SCOPES = {
  users_read: 'Read the caller’s user profile',
  drives_read: 'Read the caller’s drives',
  groups_read: 'Read the groups the caller administers',
  groups_read_reported_drives: 'Read the drives reported to the groups the caller administers',
};

const rateLimitHeaders = {
  'X-RateLimit-Limit': {
    description: 'Requests allowed per minute on this route for this caller.',
    schema: { type: 'integer' },
  },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'When the window resets (epoch seconds).', schema: { type: 'integer' } },
  'RateLimit-Policy': {
    description: '(+) IETF draft field, e.g. `"per-minute";q=30;w=60`.',
    schema: { type: 'string' },
  },
  RateLimit: { description: '(+) IETF draft field, e.g. `"per-minute";r=29;t=42`.', schema: { type: 'string' } },
  'X-Request-Id': {
    description: 'The request id (echoed when the client sent an acceptable one).',
    schema: { type: 'string' },
  },
};

const problem = (description: string, headers: Record<string, object> = {}) => ({
  description,
  headers: { 'X-Request-Id': rateLimitHeaders['X-Request-Id'], ...headers },
  content: { 'application/json': { schema: ref('Problem') } },
});

const errorResponses = {
  '401': problem('Missing, malformed, expired or wrongly signed token, or wrong issuer or audience.', {
    'WWW-Authenticate': {
      description: '`Bearer realm="mileage"`, with `error="invalid_token"` when a token was sent.',
      schema: { type: 'string' },
    },
  }),
  '403': problem(
    'The token lacks the route’s scope (with `WWW-Authenticate: Bearer error="insufficient_scope"`), names no active platform user, or the data belongs to someone else.',
  ),
  '422': {
    description: 'A malformed or out-of-range parameter.',
    headers: { 'X-Request-Id': rateLimitHeaders['X-Request-Id'] },
    content: { 'application/json': { schema: ref('HTTPValidationError') } },
  },
  '429': problem('Rate limit exceeded.', {
    ...rateLimitHeaders,
    'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' } },
  }),
  '503': problem('(+) A backing service is unavailable.', {
    'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' } },
  }),
  '504': problem('(+) A backing service did not answer in time.'),
};

const ok = (schema: object, description: string) => ({
  '200': { description, headers: rateLimitHeaders, content: { 'application/json': { schema } } },
});

const userIdParam = {
  name: 'user_id',
  in: 'path',
  required: true,
  description: 'Platform user id.',
  schema: ref('UserId'),
};
const groupIdParam = {
  name: 'group_id',
  in: 'path',
  required: true,
  description: 'Group id (a positive integer).',
  schema: { type: 'string', pattern: '^[1-9][0-9]{0,15}$' },
};
const listParams = (withClassification: boolean) => [
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
  ...(withClassification
    ? [
        {
          name: 'classification',
          in: 'query',
          schema: { type: 'string', enum: ['business', 'personal', 'all'], default: 'business' },
        },
      ]
    : []),
  {
    name: 'filter_by',
    in: 'query',
    description: 'The field that date_after / date_before bound and the list is ordered by.',
    schema: { type: 'string', enum: ['modified', 'ended'] },
  },
  {
    name: 'date_after',
    in: 'query',
    description: 'Exclusive lower bound (RFC 3339); requires filter_by.',
    schema: dateTime,
  },
  {
    name: 'date_before',
    in: 'query',
    description: 'Exclusive upper bound (RFC 3339); requires filter_by.',
    schema: dateTime,
  },
  {
    name: 'modified_after',
    in: 'query',
    deprecated: true,
    description: 'Alias of filter_by=modified&date_after=…',
    schema: dateTime,
  },
  {
    name: 'modified_before',
    in: 'query',
    deprecated: true,
    description: 'Alias of filter_by=modified&date_before=…',
    schema: dateTime,
  },
  {
    name: 'cursor',
    in: 'query',
    description: '(+) The next_cursor of the previous page of the same query.',
    schema: { type: 'string' },
  },
];

const operation = (o: {
  id: string;
  summary: string;
  scope: keyof typeof V1_SCOPES;
  limit: number;
  params?: object[];
  response: object;
  description?: string;
  deprecated?: boolean;
}) => ({
  get: {
    operationId: o.id,
    summary: o.summary,
    description: `${o.description ?? ''}\n\nScope \`${o.scope}\`; ${o.limit} requests per minute per caller.`.trim(),
    ...(o.deprecated ? { deprecated: true } : {}),
    security: [{ oauth2: [o.scope] }],
    parameters: o.params ?? [],
    responses: { ...o.response, ...errorResponses },
  },
});

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

export function openApiDocument(options: { issuer: string }) {
  const oidc = `${options.issuer.replace(/\/$/, '')}/protocol/openid-connect`;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Mileage Platform External API',
      version: '2.0.0',
      description:
        'Read-only access to user profiles, teams, drives and the drives reported to a team (`/v1`), and SCIM 2.0 provisioning of users and team membership (`/scim/v2`). OAuth 2.1 bearer tokens from the realm `mileage`.',
    },
    servers: [{ url: '/' }],
    security: [{ oauth2: [] }],
    paths: {
      '/v1/users/me': operation({
        id: 'getMe',
        summary: 'The caller’s profile',
        scope: 'users_read',
        limit: 30,
        response: ok(ref('UserSchema'), 'The caller.'),
      }),
      '/v1/users/{user_id}': operation({
        id: 'getUser',
        summary: 'A user’s profile (the caller’s own id only)',
        scope: 'users_read',
        limit: 30,
        params: [userIdParam],
        response: ok(ref('UserSchema'), 'The user.'),
        description: 'Another user’s id is 403.',
      }),
      '/v1/users/{user_id}/drives': operation({
        id: 'getUserDrives',
        summary: 'The caller’s drives',
        scope: 'drives_read',
        limit: 20,
        params: [userIdParam, ...listParams(true)],
        response: ok(
          ref('GetDrivesResponse'),
          'One page, most recent first on the filter field (modified by default), ties by drive id descending.',
        ),
      }),
      '/v1/groups': operation({
        id: 'getGroups',
        summary: 'The groups the caller administers',
        scope: 'groups_read',
        limit: 30,
        response: ok(ref('GroupListResponse'), 'The groups.'),
      }),
      '/v1/groups/{group_id}': operation({
        id: 'getGroup',
        summary: 'One group (its admins only)',
        scope: 'groups_read',
        limit: 30,
        params: [groupIdParam],
        response: {
          ...ok(ref('GroupListResponse'), 'The group as the only resource.'),
        },
      }),
      '/v1/groups/{group_id}/reported-drives': operation({
        id: 'getGroupReportedDrives',
        summary: 'The drives reported to a group (its admins only)',
        scope: 'groups_read_reported_drives',
        limit: 60,
        params: [groupIdParam, ...listParams(false)],
        response: {
          ...ok(ref('GetReportedDrivesResponse'), 'One page, most recent first.'),
        },
      }),
      '/v1/drives': operation({
        id: 'getReportedDrives',
        summary: 'The drives reported to every group the caller administers (alpha)',
        scope: 'groups_read_reported_drives',
        limit: 60,
        params: listParams(false),
        deprecated: true,
        response: ok(ref('GetReportedDrivesResponse'), 'One page, most recent first.'),
        description:
          'Kept for existing integrations; use /v1/groups/{group_id}/reported-drives. Responses carry `Deprecation: @1795305600` (RFC 9745: deprecated since 2026-11-22) and a `Link` with `rel="deprecation"`.',
      }),
      ...scimPaths(),
    },
    components: {
      securitySchemes: {
        oauth2: {
          type: 'oauth2',
          description:
            'Keycloak realm `mileage`. Integrations use the authorization-code grant with PKCE (S256); provisioning clients the client-credentials grant with scope `scim`.',
          flows: {
            authorizationCode: {
              authorizationUrl: `${oidc}/auth`,
              tokenUrl: `${oidc}/token`,
              refreshUrl: `${oidc}/token`,
              scopes: V1_SCOPES,
            },
            clientCredentials: {
              tokenUrl: `${oidc}/token`,
              scopes: { scim: 'Provision users and group membership (SCIM 2.0)' },
            },
          },
        },
      },
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
        GetDrivesResponse: {
          type: 'object',
          required: ['results', 'has_more', 'next_cursor'],
          properties: {
            results: { type: 'array', items: ref('DriveSchema') },
            has_more: { type: 'boolean' },
            next_cursor: { type: ['string', 'null'], description: '(+) Opaque; pass as `cursor` for the next page.' },
          },
        },
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
        GetReportedDrivesResponse: {
          type: 'object',
          required: ['results', 'has_more', 'next_cursor'],
          properties: {
            results: { type: 'array', items: ref('ReportedDriveSchema') },
            has_more: { type: 'boolean' },
            next_cursor: { type: ['string', 'null'] },
          },
        },
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
