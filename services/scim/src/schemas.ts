// The SCIM schemas this service implements (RFC 7643 §4, §8.7), as served by /Schemas and used to read,
// validate, project and patch resources. Attribute names are matched case-insensitively everywhere.

import { ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA } from '@mileage/scim-domain';

export { ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA };
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

export type AttributeType =
  'string' | 'boolean' | 'complex' | 'dateTime' | 'reference' | 'decimal' | 'integer' | 'binary';

export interface Attribute {
  name: string;
  type: AttributeType;
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact: boolean;
  mutability: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned: 'always' | 'never' | 'default' | 'request';
  uniqueness: 'none' | 'server' | 'global';
  canonicalValues?: string[];
  referenceTypes?: string[];
  subAttributes?: Attribute[];
}

function attr(name: string, description: string, options: Partial<Attribute> = {}): Attribute {
  return {
    name,
    type: 'string',
    multiValued: false,
    description,
    required: false,
    caseExact: false,
    mutability: 'readWrite',
    returned: 'default',
    uniqueness: 'none',
    ...options,
  };
}

/** The sub-attributes RFC 7643 gives multi-valued attributes such as emails and phoneNumbers. */
function multi(name: string, description: string, types: string[], valueOptions: Partial<Attribute> = {}): Attribute {
  return attr(name, description, {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attr('value', `The value of the ${name} entry.`, valueOptions),
      attr('display', 'A human-readable name, primarily used for display purposes.'),
      attr('type', "A label indicating the attribute's function.", types.length ? { canonicalValues: types } : {}),
      attr('primary', 'Indicates the primary or preferred value.', { type: 'boolean' }),
    ],
  });
}

export const USER_ATTRIBUTES: Attribute[] = [
  attr('userName', 'Unique identifier for the user, typically used to sign in. Unique case-insensitively.', {
    required: true,
    uniqueness: 'server',
  }),
  attr('name', "The components of the user's name.", {
    type: 'complex',
    subAttributes: [
      attr('formatted', 'The full name.'),
      attr('familyName', 'The family name.'),
      attr('givenName', 'The given name.'),
      attr('middleName', 'The middle name(s).'),
      attr('honorificPrefix', 'The honorific prefix(es).'),
      attr('honorificSuffix', 'The honorific suffix(es).'),
    ],
  }),
  attr('displayName', 'The name of the user, suitable for display.'),
  attr('nickName', 'The casual way to address the user.'),
  attr('profileUrl', "A URI of the user's online profile.", { type: 'reference', referenceTypes: ['external'] }),
  attr('title', 'The user\'s title, such as "Vice President".'),
  attr('userType', 'The relationship between the organization and the user.'),
  attr('preferredLanguage', 'The preferred written or spoken language (RFC 7231 Accept-Language form).'),
  attr('locale', 'The default location for localizing dates and numbers, e.g. "en-US".'),
  attr('timezone', 'The user\'s time zone in IANA form, e.g. "America/Chicago"; used for drive times. Default UTC.', {
    caseExact: true,
    canonicalValues: ['UTC', ...Intl.supportedValuesOf('timeZone').filter((z) => z !== 'UTC')],
  }),
  attr('active', 'Whether the user may use the platform. false refuses every /v1 request of the user at once.', {
    type: 'boolean',
  }),
  attr('password', 'Accepted and discarded: the platform never stores passwords.', {
    mutability: 'writeOnly',
    returned: 'never',
  }),
  {
    ...multi('emails', 'E-mail addresses of the user (at most 10).', ['work', 'home', 'other']),
    // display is accepted (Okta sends it) but not kept: declared read-only, so input values are ignored.
    subAttributes: multi('emails', '', ['work', 'home', 'other']).subAttributes!.map((a) =>
      a.name === 'display'
        ? { ...a, mutability: 'readOnly' as const, description: 'Ignored on input; not stored.' }
        : a,
    ),
  },
  multi('phoneNumbers', 'Phone numbers of the user.', ['work', 'home', 'mobile', 'fax', 'pager', 'other']),
  multi('ims', 'Instant messaging addresses of the user.', []),
  multi('photos', 'URLs of photos of the user.', ['photo', 'thumbnail'], {
    type: 'reference',
    referenceTypes: ['external'],
  }),
  attr('addresses', 'Physical mailing addresses of the user.', {
    type: 'complex',
    multiValued: true,
    subAttributes: ['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type']
      .map((n) =>
        attr(
          n,
          `The ${n} component of the address.`,
          n === 'type' ? { canonicalValues: ['work', 'home', 'other'] } : {},
        ),
      )
      .concat([attr('primary', 'Indicates the primary address.', { type: 'boolean' })]),
  }),
  multi('entitlements', 'Entitlements of the user.', []),
  multi('roles', 'Roles of the user (informational; group roles are managed in the platform).', []),
  multi('x509Certificates', 'X.509 certificates of the user (base64 DER).', [], { type: 'binary', caseExact: true }),
];

export const ENTERPRISE_ATTRIBUTES: Attribute[] = [
  attr('employeeNumber', 'Numeric or alphanumeric identifier assigned to a person.', { caseExact: true }),
  attr('costCenter', 'Identifies the name of a cost center.'),
  attr('organization', 'Identifies the name of an organization.'),
  attr('division', 'Identifies the name of a division.'),
  attr('department', 'Identifies the name of a department.'),
  attr('manager', "The user's manager.", {
    type: 'complex',
    subAttributes: [
      attr('value', 'The id of the manager.', { caseExact: true }),
      attr('$ref', 'The URI of the manager.', { type: 'reference', referenceTypes: ['User'] }),
      attr('displayName', 'The display name of the manager.', { mutability: 'readOnly' }),
    ],
  }),
];

export const GROUP_ATTRIBUTES: Attribute[] = [
  attr('displayName', 'The name of the group (a team of the platform).', { required: true }),
  attr('members', 'The users in the group. New members become drivers; members who stay keep their roles.', {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attr('value', 'The id of the user.', { caseExact: true, mutability: 'immutable' }),
      attr('$ref', 'The URI of the user.', { type: 'reference', referenceTypes: ['User'], mutability: 'immutable' }),
      attr('display', 'The display name of the user.', { mutability: 'readOnly' }),
      attr('type', 'Always "User": groups do not nest.', { canonicalValues: ['User'], mutability: 'immutable' }),
    ],
  }),
];

/** Attributes every resource has (RFC 7643 §3.1), returned always or by default. */
export const COMMON_ATTRIBUTES: Attribute[] = [
  attr('id', 'Identifier of the resource, assigned by the service provider.', {
    caseExact: true,
    mutability: 'readOnly',
    returned: 'always',
    uniqueness: 'server',
  }),
  attr('externalId', 'Identifier of the resource in the provisioning client.', { caseExact: true }),
  attr('meta', 'Resource metadata.', {
    type: 'complex',
    mutability: 'readOnly',
    subAttributes: ['resourceType', 'created', 'lastModified', 'location', 'version'].map((n) =>
      attr(n, `The ${n} of the resource.`, {
        mutability: 'readOnly',
        type: n === 'created' || n === 'lastModified' ? 'dateTime' : n === 'location' ? 'reference' : 'string',
        caseExact: true,
      }),
    ),
  }),
];

export function findAttribute(list: Attribute[], name: string): Attribute | undefined {
  const lower = name.toLowerCase();
  return list.find((a) => a.name.toLowerCase() === lower);
}

/** A schema resource of /Schemas. */
export function schemaResource(
  id: string,
  name: string,
  description: string,
  attributes: Attribute[],
  baseUrl: string,
) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id,
    name,
    description,
    attributes,
    meta: { resourceType: 'Schema', location: `${baseUrl}/Schemas/${id}` },
  };
}
