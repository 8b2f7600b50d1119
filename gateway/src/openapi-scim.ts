/**
 * The /scim/v2 part of the OpenAPI document: SCIM 2.0 (RFC 7643 / 7644) as this platform implements it.
 * Bodies are application/scim+json (application/json is accepted on requests). The User and Group schemas are
 * derived from the resource declarations (@mileage/scim-domain), the same ones /Schemas serves.
 */
import {
  DEFAULT_MAX_VALUES,
  GROUP_RESOURCE_TYPE,
  MAX_RESULTS,
  USER_RESOURCE_TYPE,
  type Attribute,
  type ResourceDeclaration,
} from '@mileage/scim-domain';
import { SCIM_EXAMPLES } from './openapi-examples';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const SCIM = 'application/scim+json';
const dateTime = { type: 'string', format: 'date-time' };

const scimError = (description: string, example: object, headers: Record<string, object> = {}) => ({
  description,
  headers,
  content: { [SCIM]: { schema: ref('ScimError'), example } },
});
const retryAfter = { 'Retry-After': { $ref: '#/components/headers/Retry-After' } };
const E = SCIM_EXAMPLES.errors;

/** The errors every SCIM route may answer, described once (components.responses). */
const COMMON_ERRORS = {
  ScimBadRequest: scimError(
    'Invalid request: `scimType` says why (invalidSyntax, invalidValue, invalidFilter, invalidPath, noTarget, mutability).',
    E['400'],
  ),
  ScimUnauthorized: scimError(
    'Missing or invalid bearer token: also a `scim` token that names no known organization, and a malformed, unknown, expired or revoked SCIM secret token (alike).',
    E['401'],
    {
      'WWW-Authenticate': {
        description: '`Bearer realm="mileage"`.',
        schema: { type: 'string' },
        example: 'Bearer realm="mileage"',
      },
    },
  ),
  ScimForbidden: scimError('The token lacks the scope `scim` (a person’s token never has it).', E['403']),
  ScimPayloadTooLarge: scimError('The body is larger than 1 MB.', E['413']),
  ScimUnsupportedMediaType: scimError('The body is not application/scim+json or application/json.', E['415']),
  ScimTooManyRequests: scimError('More than 1,200 requests in a minute for this organization.', E['429'], retryAfter),
  ScimInternalError: scimError('An unexpected error; nothing internal is disclosed.', E['500']),
  ScimServiceUnavailable: scimError(
    'A backing service is unavailable, or other writers kept changing the resource (12 rounds): try again.',
    E['503'],
    retryAfter,
  ),
  ScimGatewayTimeout: scimError('A backing service did not answer in time.', E['504']),
};
const refTo = (name: keyof typeof COMMON_ERRORS) => ({ $ref: `#/components/responses/${name}` });
const commonErrors = {
  '400': refTo('ScimBadRequest'),
  '401': refTo('ScimUnauthorized'),
  '403': refTo('ScimForbidden'),
  '413': refTo('ScimPayloadTooLarge'),
  '415': refTo('ScimUnsupportedMediaType'),
  '429': refTo('ScimTooManyRequests'),
  // Answered by the HTTP server before any route, the same for every path (described once with the /v1 errors).
  '431': { $ref: '#/components/responses/HeadersTooLarge' },
  '500': refTo('ScimInternalError'),
  '503': refTo('ScimServiceUnavailable'),
  '504': refTo('ScimGatewayTimeout'),
};

export function scimResponses() {
  return COMMON_ERRORS;
}

const resourceHeaders = {
  ETag: {
    description: 'The resource version, e.g. `W/"3"`; send it in If-Match to update only that version.',
    schema: { type: 'string' },
    example: 'W/"1"',
  },
};
const okResource = (schema: 'ScimUser' | 'ScimGroup', status = '200', extraHeaders: Record<string, object> = {}) => ({
  [status]: {
    description: status === '201' ? 'Created.' : 'The resource.',
    headers: { ...resourceHeaders, ...extraHeaders },
    content: {
      [SCIM]: { schema: ref(schema), example: schema === 'ScimUser' ? SCIM_EXAMPLES.user : SCIM_EXAMPLES.group },
    },
  },
});
const listOk = (schema: 'ScimUserList' | 'ScimGroupList' | 'ScimListResponse') => ({
  '200': {
    description: 'One page (startIndex / count), ordered by id.',
    content: {
      [SCIM]: {
        schema: ref(schema),
        example:
          schema === 'ScimUserList'
            ? SCIM_EXAMPLES.userList
            : schema === 'ScimGroupList'
              ? SCIM_EXAMPLES.groupList
              : SCIM_EXAMPLES.mixedList,
      },
    },
  },
});

const idParam = (what: string) => ({
  name: 'id',
  in: 'path',
  required: true,
  description: `${what} id.`,
  schema: { type: 'string' },
});
const ifMatch = {
  name: 'If-Match',
  in: 'header',
  description: 'Apply only if the resource is still at this ETag (else 412).',
  schema: { type: 'string' },
};
const query = (name: string, description: string, schema: object = { type: 'string' }) => ({
  name,
  in: 'query',
  description,
  schema,
});
const projection = [
  query('attributes', 'Comma-separated attributes to return (plus id and schemas).'),
  query('excludedAttributes', 'Comma-separated attributes to leave out, e.g. `members`.'),
];
const listParams = [
  query('filter', 'RFC 7644 §3.4.2.2 filter; attribute names and operators case-insensitive.', {
    type: 'string',
    maxLength: 2048,
  }),
  query('startIndex', '1-based index of the first result.', { type: 'integer', default: 1 }),
  query('count', `Page size; at most ${MAX_RESULTS}.`, { type: 'integer', default: 100 }),
  ...projection,
];
const body = (schema: string) => ({
  required: true,
  content: { [SCIM]: { schema: ref(schema) }, 'application/json': { schema: ref(schema) } },
});
const op = (summary: string, { description, ...extra }: { description?: string } & Record<string, unknown>) => ({
  summary,
  description:
    `${description ?? ''}\n\n**Token** client credentials of a provisioning client (scope \`scim\`) or a SCIM secret token (\`mscim_…\`) · **Rate limit** 1,200 requests per minute per organization (all SCIM routes together).`.trim(),
  tags: ['SCIM 2.0'],
  // The scim scheme documents the grant; scimToken lets this page send a token obtained elsewhere.
  security: [{ scim: ['scim'] }, { scimToken: [] }],
  ...extra,
});
const notImplemented = (summary: string, parameters: unknown[] = []) =>
  op(summary, {
    ...(parameters.length ? { parameters } : {}),
    responses: {
      '501': scimError('Not implemented: groups are created and deleted by the platform.', E['501']),
      ...commonErrors,
    },
  });

/** GET, PUT and PATCH of one user or group: the same parameters, bodies and answers but for the resource's own. */
function itemOperations(
  kind: 'User' | 'Group',
  text: { read: string; replace: string; change: string; conflict?: object },
) {
  const schema = kind === 'User' ? 'ScimUser' : 'ScimGroup';
  const notFound = { '404': scimError(`No such ${kind.toLowerCase()}.`, E['404']) };
  const write = (summary: string, bodySchema: string) =>
    op(summary, {
      parameters: [idParam(kind), ifMatch, ...projection],
      requestBody: body(bodySchema),
      responses: {
        ...okResource(schema),
        ...notFound,
        ...(text.conflict ? { '409': text.conflict } : {}),
        '412': scimError('If-Match names an old version.', E['412']),
        ...commonErrors,
      },
    });
  return {
    get: op(text.read, {
      parameters: [idParam(kind), ...projection],
      responses: {
        ...okResource(schema),
        '304': { description: 'Not modified (If-None-Match).' },
        ...notFound,
        ...commonErrors,
      },
    }),
    put: write(text.replace, schema),
    patch: write(text.change, 'PatchOp'),
  };
}

export function scimPaths() {
  return {
    '/scim/v2/Users': {
      get: op('List or find users', {
        parameters: listParams,
        responses: { ...listOk('ScimUserList'), ...commonErrors },
      }),
      post: op('Provision a user', {
        requestBody: body('ScimUser'),
        responses: {
          ...okResource('ScimUser', '201', {
            Location: { description: 'The URL of the new user.', schema: { type: 'string', format: 'uri' } },
          }),
          '409': scimError('userName (case-insensitively) or id is taken (`uniqueness`).', E['409']),
          ...commonErrors,
        },
      }),
    },
    '/scim/v2/Users/{id}': {
      ...itemOperations('User', {
        read: 'Read a user',
        replace: 'Replace a user',
        change: 'Change a user',
        conflict: scimError('userName taken (`uniqueness`).', E['409']),
      }),
      delete: op('Deprovision a user: deactivated at once, drives kept', {
        parameters: [idParam('User'), ifMatch],
        responses: {
          '204': { description: 'Deleted.' },
          '404': scimError('No such user.', E['404']),
          '412': scimError('If-Match names an old version.', E['412']),
          ...commonErrors,
        },
      }),
    },
    '/scim/v2/Groups': {
      get: op('List or find groups', {
        parameters: listParams,
        responses: { ...listOk('ScimGroupList'), ...commonErrors },
      }),
      post: notImplemented('Not supported (501)'),
    },
    '/scim/v2/Groups/{id}': {
      ...itemOperations('Group', {
        read: 'Read a group',
        replace: 'Replace a group’s name and members',
        change: 'Change a group’s name or members',
      }),
      delete: notImplemented('Not supported (501)', [idParam('Group')]),
    },
    '/scim/v2/Users/.search': {
      post: op('Search users (filter in the body)', {
        requestBody: body('SearchRequest'),
        responses: { ...listOk('ScimUserList'), ...commonErrors },
      }),
    },
    '/scim/v2/Groups/.search': {
      post: op('Search groups (filter in the body)', {
        requestBody: body('SearchRequest'),
        responses: { ...listOk('ScimGroupList'), ...commonErrors },
      }),
    },
    '/scim/v2/.search': {
      post: op('Search users and groups: users first, then groups, one index space', {
        requestBody: body('SearchRequest'),
        responses: { ...listOk('ScimListResponse'), ...commonErrors },
      }),
    },
    '/scim/v2/ServiceProviderConfig': {
      get: op('What this service provider supports', {
        responses: {
          '200': {
            description: 'RFC 7643 §5.',
            content: { [SCIM]: { schema: { type: 'object' }, example: SCIM_EXAMPLES.serviceProviderConfig } },
          },
          ...commonErrors,
        },
      }),
    },
    '/scim/v2/ResourceTypes': {
      get: op('Resource types', {
        responses: {
          '200': {
            description: 'User and Group.',
            content: { [SCIM]: { schema: ref('ScimListResponse'), example: SCIM_EXAMPLES.resourceTypes } },
          },
          ...commonErrors,
        },
      }),
    },
    '/scim/v2/ResourceTypes/{id}': {
      get: op('One resource type', {
        parameters: [idParam('ResourceType')],
        responses: {
          '200': {
            description: 'The resource type.',
            content: { [SCIM]: { schema: { type: 'object' }, example: SCIM_EXAMPLES.resourceType } },
          },
          '404': scimError('No such resource type.', E['404']),
          ...commonErrors,
        },
      }),
    },
    '/scim/v2/Schemas': {
      get: op('Schemas', {
        responses: {
          '200': {
            description: 'User, EnterpriseUser and Group.',
            content: { [SCIM]: { schema: ref('ScimListResponse'), example: SCIM_EXAMPLES.schemas } },
          },
          ...commonErrors,
        },
      }),
    },
    '/scim/v2/Schemas/{id}': {
      get: op('One schema', {
        parameters: [idParam('Schema URN')],
        responses: {
          '200': {
            description: 'The schema.',
            content: { [SCIM]: { schema: { type: 'object' }, example: SCIM_EXAMPLES.schema } },
          },
          '404': scimError('No such schema.', E['404']),
          ...commonErrors,
        },
      }),
    },
  };
}

const meta = (resourceType: string) => ({
  type: 'object',
  properties: {
    resourceType: { const: resourceType },
    created: dateTime,
    lastModified: dateTime,
    location: { type: 'string', format: 'uri' },
    version: { type: 'string' },
  },
});

const VALUE_TYPES: Record<Attribute['type'], object> = {
  string: { type: 'string' },
  reference: { type: 'string' },
  binary: { type: 'string' },
  dateTime,
  boolean: { type: 'boolean' },
  integer: { type: 'integer' },
  decimal: { type: 'number' },
  complex: { type: 'object' },
};

/** The JSON Schema of one declared attribute: its type, a single canonical value as const, the values' limit. */
function attributeSchema(a: Attribute): object {
  const needed = a.subAttributes?.filter((s) => s.needed).map((s) => s.name) ?? [];
  const one = {
    ...VALUE_TYPES[a.type],
    ...(needed.length ? { required: needed } : {}),
    ...(a.subAttributes ? { properties: properties(a.subAttributes) } : {}),
    ...(a.canonicalValues?.length === 1 ? { const: a.canonicalValues[0] } : {}),
    ...(a.mutability === 'writeOnly' ? { writeOnly: true } : {}),
  };
  if (!a.multiValued) return { ...one, description: a.description };
  return { type: 'array', description: a.description, items: one, maxItems: a.maxValues ?? DEFAULT_MAX_VALUES };
}

function properties(attributes: Attribute[]): Record<string, object> {
  return Object.fromEntries(attributes.map((a) => [a.name, attributeSchema(a)]));
}

/** A resource's schema: the common attributes, its own, its extensions (one object each) and meta. */
function resourceSchema(resource: ResourceDeclaration, description: string) {
  const [id, externalId] = resource.common;
  const resourceProperties: Record<string, object> = {
    schemas: { type: 'array', items: { type: 'string' } },
    id: { type: 'string', pattern: resource.idPattern, description: id!.description },
    externalId: attributeSchema(externalId!),
    ...properties(resource.schema.attributes),
    ...Object.fromEntries(
      resource.extensions.map((e) => [
        e.id,
        { type: 'object', description: e.description, properties: properties(e.attributes) },
      ]),
    ),
    meta: meta(resource.name),
  };
  return { type: 'object', description, required: ['schemas', 'id'], properties: resourceProperties };
}

/** The SCIM component schemas; `resources` only differs in tests (a declaration with an attribute of their own). */
export function scimSchemas(resources = { user: USER_RESOURCE_TYPE, group: GROUP_RESOURCE_TYPE }) {
  return {
    ScimUser: resourceSchema(
      resources.user,
      'RFC 7643 §4.1 User with the enterprise extension. Responses honour attributes / excludedAttributes, so only schemas and id are always present.',
    ),
    ScimGroup: resourceSchema(
      resources.group,
      'RFC 7643 §4.2 Group: a team of the platform. Members added by SCIM are drivers; members who stay keep their roles.',
    ),
    ScimListResponse: {
      type: 'object',
      required: ['schemas', 'totalResults', 'startIndex', 'itemsPerPage', 'Resources'],
      properties: {
        schemas: { type: 'array', items: { const: 'urn:ietf:params:scim:api:messages:2.0:ListResponse' } },
        totalResults: { type: 'integer', minimum: 0 },
        startIndex: { type: 'integer', minimum: 1 },
        itemsPerPage: { type: 'integer', minimum: 0 },
        Resources: { type: 'array', items: { type: 'object' } },
      },
    },
    ScimUserList: {
      allOf: [
        ref('ScimListResponse'),
        { type: 'object', properties: { Resources: { type: 'array', items: ref('ScimUser') } } },
      ],
    },
    ScimGroupList: {
      allOf: [
        ref('ScimListResponse'),
        { type: 'object', properties: { Resources: { type: 'array', items: ref('ScimGroup') } } },
      ],
    },
    SearchRequest: {
      type: 'object',
      description: 'RFC 7644 §3.4.3: the query parameters of a GET as a body.',
      properties: {
        schemas: { type: 'array', items: { const: 'urn:ietf:params:scim:api:messages:2.0:SearchRequest' } },
        filter: { type: 'string' },
        startIndex: { type: 'integer' },
        count: { type: 'integer' },
        attributes: { type: 'array', items: { type: 'string' } },
        excludedAttributes: { type: 'array', items: { type: 'string' } },
      },
    },
    PatchOp: {
      type: 'object',
      required: ['Operations'],
      properties: {
        schemas: { type: 'array', items: { type: 'string' } },
        Operations: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            required: ['op'],
            properties: {
              op: { type: 'string', description: 'add, replace or remove (any case).' },
              path: { type: 'string' },
              value: {},
            },
          },
        },
      },
    },
    ScimError: {
      type: 'object',
      required: ['schemas', 'status', 'detail'],
      properties: {
        schemas: { type: 'array', items: { const: 'urn:ietf:params:scim:api:messages:2.0:Error' } },
        status: { type: 'string', pattern: '^[1-5][0-9]{2}$' },
        scimType: {
          type: 'string',
          enum: [
            'invalidFilter',
            'tooMany',
            'uniqueness',
            'mutability',
            'invalidSyntax',
            'invalidPath',
            'noTarget',
            'invalidValue',
            'invalidVers',
            'sensitive',
          ],
        },
        detail: { type: 'string' },
      },
    },
  };
}
