/**
 * Examples of the OpenAPI document: responses of `npm start` with its demo data (CONTRACT §6), as Alice (admin of
 * group 1 "Demo Team"), Bob (a driver) and the provisioning client saw them. Lists are cut to one item; timestamps
 * are those of one seeding. openapi.test.ts validates every example against its schema.
 */
import {
  GROUP_RESOURCE_TYPE,
  resourceTypeDocument,
  schemaDocument,
  serviceProviderConfig,
  USER_RESOURCE_TYPE,
} from '@mileage/scim-domain';

const HOST = 'http://127.0.0.1:8080';
const SCIM_BASE = `${HOST}/scim/v2`;

const alice = {
  id: 'AliceAdm01',
  userName: 'alice@example.com',
  name: { givenName: 'Alice', familyName: 'Admin', formatted: 'Alice Admin' },
  emails: [{ value: 'alice@example.com', type: 'work', primary: true }],
  active: true,
  displayName: 'Alice Admin',
};

const demoTeam = {
  id: '1',
  display_name: 'Demo Team',
  members: [
    { value: 'AliceAdm01', display: 'Alice Admin', is_admin: true, is_driver: false },
    { value: 'BobDriver1', display: 'Bob Driver', is_admin: false, is_driver: true },
    { value: 'CarolDrv01', display: 'Carol Driver', is_admin: false, is_driver: true },
  ],
  meta: {
    resourceType: 'Group',
    created: '2026-11-23T09:18:44.130Z',
    lastModified: '2026-11-23T09:18:44.130Z',
    location: `${HOST}/v1/groups/1`,
  },
};

const bobsDrive = {
  drive_id: 65,
  created: '2026-11-23T09:18:45.073Z',
  modified: '2026-11-23T09:18:45.073Z',
  started_at: '2026-11-21T08:27:00.000Z',
  ended_at: '2026-11-21T10:19:00.000Z',
  distance: { amount: 57.1, units: 'mi', discounted: 45 },
  value: { amount: 3997, currency: 'USD' },
  toll_fees: null,
  parking_fees: { amount: 588, currency: 'USD' },
  description: null,
  entry: 'automatic',
  classification: 'business',
  purpose: 'Supplies pickup',
  start: {
    name: 'Client HQ',
    lat: '43.0389',
    lon: '-87.9065',
    time: '2026-11-21T08:27:00.000Z',
    address: { country: 'US', state: 'WI', city: 'Milwaukee', street: '411 E Wisconsin Ave', postal_code: '53202' },
  },
  end: {
    name: "O'Hare Airport",
    lat: '41.9742',
    lon: '-87.9073',
    time: '2026-11-21T10:19:00.000Z',
    address: { country: 'US', state: 'IL', city: 'Chicago', street: "10000 W O'Hare Ave", postal_code: '60666' },
  },
};

const carolsReportedDrive = {
  id: '114',
  driver: {
    id: 'CarolDrv01',
    name: 'Carol Driver',
    email: 'carol@example.com',
    status: 'active',
    timezone_offset: -4,
  },
  details: {
    distance: { amount: 28.5, units: 'km', discounted: 22 },
    value: { amount: 2052, currency: 'CAD' },
    toll_fees: { amount: 617, currency: 'CAD' },
    parking_fees: null,
    description: null,
    entry: 'manual',
    classification: 'business',
    purpose: 'Training',
    start: {
      name: 'Client Site',
      lat: '43.4307',
      lon: '-79.7173',
      time: '2026-10-30T16:40:00.000Z',
      address: { country: 'CA', state: 'ON', city: 'Oakville', street: '2525 Speers Rd', postal_code: 'L6L 2X9' },
    },
    end: {
      name: 'Home',
      lat: '43.6406',
      lon: '-79.3801',
      time: '2026-10-30T17:31:00.000Z',
      address: { country: 'CA', state: 'ON', city: 'Toronto', street: '88 Queens Quay W', postal_code: 'M5J 0B8' },
    },
  },
  created: '2026-11-23T09:18:47.089Z',
  modified: '2026-11-23T09:18:47.103Z',
  status: 'approved',
  review_comments: [
    { id: '17', text: 'Approved, thanks.', created_at: '2026-11-23T09:18:47.103Z', user_email: 'alice@example.com' },
  ],
};

const cursor =
  'eyJ2IjoxLCJxIjoiajFNY090QW9LRnZXX3piV3A4RWJnMiIsInQiOiIyMDI2LTExLTIzVDA5OjE4OjQ1LjA3M1oiLCJpIjo2NX0.a_IUVpfMgb7sgmuNki1tz3OunknulSgRWHfhmvDNkVg';

const problem = (status: number, title: string, detail: string) => ({ detail, type: 'about:blank', title, status });

export const V1_EXAMPLES = {
  user: alice,
  groups: { resources: [demoTeam] },
  drives: { results: [bobsDrive], has_more: true, next_cursor: cursor },
  reportedDrives: { results: [carolsReportedDrive], has_more: true, next_cursor: cursor },
  unauthorized: problem(401, 'Unauthorized', 'Not authenticated'),
  forbidden: problem(403, 'Forbidden', 'The token lacks the scope "groups_read"'),
  forbiddenOwnership: problem(403, 'Forbidden', "Access to another user's profile is not allowed"),
  validation: {
    detail: [
      {
        loc: ['query', 'limit'],
        msg: 'Input should be greater than or equal to 1',
        type: 'greater_than_equal',
      },
    ],
  },
  tooManyRequests: problem(429, 'Too Many Requests', 'Rate limit of 30 requests per minute exceeded'),
  unavailable: problem(503, 'Service Unavailable', 'A backing service is unavailable; try again shortly'),
  timeout: problem(504, 'Gateway Timeout', 'A backing service did not answer in time'),
  // (+) The change feed (include_deleted=true): tombstones in order with live items, and the answer to a stale bound.
  drivesWithDeleted: {
    results: [{ drive_id: 66, deleted: true, modified: '2026-11-23T09:20:02.511Z' }, bobsDrive],
    has_more: true,
    next_cursor: cursor,
  },
  reportedDrivesWithDeleted: {
    results: [{ id: '115', deleted: true, modified: '2026-11-23T09:20:02.511Z' }, carolsReportedDrive],
    has_more: true,
    next_cursor: cursor,
  },
  resyncRequired: {
    detail:
      'Deletions are kept for 90 days: the list is complete only after 2026-08-25T09:20:02.511Z, and date_after (or modified_after) is earlier. Start a full sync: list without date_after and replace your copy.',
    type: '/errors/resync-required',
    title: 'Gone',
    status: 410,
  },
};

const scimError = (status: string, detail: string, scimType?: string) => ({
  schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
  status,
  ...(scimType ? { scimType } : {}),
  detail,
});

const bob = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  id: 'BobDriver1',
  userName: 'bob@example.com',
  name: { formatted: 'Bob Driver', familyName: 'Driver', givenName: 'Bob' },
  displayName: 'Bob Driver',
  emails: [{ value: 'bob@example.com', type: 'work', primary: true }],
  active: true,
  timezone: 'America/Chicago',
  meta: {
    resourceType: 'User',
    created: '2026-11-23T09:18:44.002Z',
    lastModified: '2026-11-23T09:18:44.002Z',
    location: `${SCIM_BASE}/Users/BobDriver1`,
    version: 'W/"1"',
  },
};

const scimDemoTeam = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
  id: '1',
  displayName: 'Demo Team',
  members: ['AliceAdm01:Alice Admin', 'BobDriver1:Bob Driver', 'CarolDrv01:Carol Driver'].map((m) => {
    const [value, display] = m.split(':');
    return { value: value!, display: display!, $ref: `${SCIM_BASE}/Users/${value}`, type: 'User' };
  }),
  meta: {
    resourceType: 'Group',
    created: '2026-11-23T09:18:44.130Z',
    lastModified: '2026-11-23T09:18:44.130Z',
    location: `${SCIM_BASE}/Groups/1`,
    version: 'W/"1"',
  },
};

const list = (resources: object[]) => ({
  schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
  totalResults: resources.length,
  startIndex: 1,
  itemsPerPage: resources.length,
  Resources: resources,
});

const groupSchema = schemaDocument(GROUP_RESOURCE_TYPE.schema, SCIM_BASE, GROUP_RESOURCE_TYPE.common);

export const SCIM_EXAMPLES = {
  user: bob,
  group: scimDemoTeam,
  userList: list([bob]),
  groupList: list([scimDemoTeam]),
  mixedList: list([bob, scimDemoTeam]),
  // Discovery answers are what the SCIM service derives from the same declarations.
  resourceTypes: list([USER_RESOURCE_TYPE, GROUP_RESOURCE_TYPE].map((r) => resourceTypeDocument(r, SCIM_BASE))),
  resourceType: resourceTypeDocument(GROUP_RESOURCE_TYPE, SCIM_BASE),
  schemas: list([groupSchema]),
  schema: groupSchema,
  serviceProviderConfig: serviceProviderConfig(SCIM_BASE),
  errors: {
    '400': scimError('400', 'Unknown attribute "nick" in the filter', 'invalidFilter'),
    '401': scimError('401', 'Not authenticated'),
    '403': scimError('403', 'The token lacks the scope "scim"'),
    '404': scimError('404', 'Resource not found'),
    '409': scimError('409', 'userName is already taken', 'uniqueness'),
    '412': scimError('412', 'The resource changed: its ETag is W/"2"'),
    '413': scimError('413', 'Request body larger than 1048576 bytes'),
    '415': scimError('415', 'Content-Type must be application/scim+json or application/json'),
    '429': scimError('429', 'Rate limit of 1200 requests per minute exceeded'),
    '500': scimError('500', 'Internal server error'),
    '501': scimError('501', 'Groups are created and deleted by the platform; SCIM manages their name and members'),
    '503': scimError('503', 'A backing service is unavailable; try again shortly'),
    '504': scimError('504', 'A backing service did not answer in time'),
  },
};
