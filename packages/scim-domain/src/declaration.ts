// The SCIM resources this platform serves (RFC 7643 §4, §8.7), each declared once. /Schemas, /ResourceTypes, the
// OpenAPI document's SCIM schemas, the filter table and request validation are all derived from these declarations;
// each attribute also names the field of its owner's record (the proto field) that holds it, and the owner maps that
// field to its own SQL. Attribute names are matched case-insensitively everywhere.

import { USER_ID_PATTERN } from '@mileage/runtime/formats';

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';

export type AttributeType =
  'string' | 'boolean' | 'complex' | 'dateTime' | 'reference' | 'decimal' | 'integer' | 'binary';

/** An attribute as /Schemas serves it (RFC 7643 §7). */
export interface SchemaAttribute {
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
  subAttributes?: SchemaAttribute[];
}

/** The platform's rules beyond RFC 7643's fields; never served in /Schemas. */
export interface AttributeRules {
  /**
   * The owner's field that holds the value, named as in the owner's proto message (`user_name`, `name.given_name`;
   * for a sub-attribute of a multi-valued attribute the element's field, `value`). `scim_attributes.<path>` and
   * `enterprise.<path>` are kept as sent in those document fields. No owner: the value is not kept (password).
   */
  owner?: string;
  /** The owner stores the value but refuses to filter on it (refused as unsupported, not as unknown). */
  filterable?: false;
  /** Every value must carry this sub-attribute (RFC 7643 leaves it optional; the owner cannot keep a value without it). */
  needed?: true;
  /** Most values a multi-valued attribute takes; the owner enforces it and SCIM checks it first the same way. */
  maxValues?: number;
}

export interface Attribute extends Omit<SchemaAttribute, 'subAttributes'>, AttributeRules {
  subAttributes?: Attribute[];
}

/** A schema: its URN, name and attributes. */
export interface SchemaDeclaration {
  id: string;
  name: string;
  description: string;
  attributes: Attribute[];
}

/** One resource type: its core schema, its extensions and how its bodies are read. */
export interface ResourceDeclaration {
  name: 'User' | 'Group';
  endpoint: string;
  description: string;
  /** id, externalId and meta (commonAttributes) as this resource has them. */
  common: Attribute[];
  schema: SchemaDeclaration;
  extensions: SchemaDeclaration[];
  /** The form of the ids the owner assigns (a regular expression). */
  idPattern: string;
  /** Unknown extension URNs in a body are ignored (groups: identity providers send their own) rather than refused. */
  ignoreUnknownExtensions: boolean;
  /** Read-only attributes of the RFC schema that this service does not serve but clients echo (Okta sends "groups": []). */
  ignoredOnInput: string[];
}

/** At most this many values of a multi-valued attribute that declares no limit of its own. */
export const DEFAULT_MAX_VALUES = 100;

/**
 * The rule every owner enforces when a multi-valued attribute has too many values; SCIM checks it first and reports
 * the same violation, so either path gives the client the same answer. The field is the SCIM attribute's name, never
 * where the owner keeps it (a kept attribute's owner field names an internal document).
 */
export function tooManyValues(attribute: Attribute, count: number): { field: string; description: string } | undefined {
  const max = attribute.maxValues ?? DEFAULT_MAX_VALUES;
  return count > max ? { field: attribute.name, description: `at most ${max} values` } : undefined;
}

export function attr(name: string, description: string, options: Partial<Attribute> = {}): Attribute {
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

/** A multi-valued attribute with the sub-attributes RFC 7643 gives emails, phoneNumbers and the like. */
function multi(
  name: string,
  description: string,
  types: string[],
  options: { value?: Partial<Attribute>; display?: Partial<Attribute> } & Partial<Attribute> = {},
): Attribute {
  const { value, display, ...rest } = options;
  const kept = rest.owner !== undefined;
  return attr(name, description, {
    type: 'complex',
    multiValued: true,
    ...rest,
    subAttributes: [
      attr('value', `The value of the ${name} entry.`, { ...(kept ? { owner: 'value' } : {}), ...value }),
      attr('display', 'A human-readable name, primarily used for display purposes.', display),
      attr('type', "A label indicating the attribute's function.", {
        ...(types.length ? { canonicalValues: types } : {}),
        ...(kept ? { owner: 'type' } : {}),
      }),
      attr('primary', 'Indicates the primary or preferred value.', {
        type: 'boolean',
        ...(kept ? { owner: 'primary' } : {}),
      }),
    ],
  });
}

/** The owner's document that keeps, as sent, the attributes the platform does not model (`kept`). */
export const KEPT_AS_SENT = 'scim_attributes';

/** Whether the owner keeps the attribute in a field of its own: it has an owner field, outside KEPT_AS_SENT. */
export function isModelled(attribute: Attribute): boolean {
  return attribute.owner !== undefined && !attribute.owner.startsWith(`${KEPT_AS_SENT}.`);
}

/** The attributes the platform does not model, kept as sent in the owner's scim_attributes. */
const kept = (name: string) => ({ owner: `${KEPT_AS_SENT}.${name}` });
/** Kept as sent, and not filterable. */
const keptOnly = (name: string) => ({ ...kept(name), filterable: false as const });

/**
 * The attributes every resource has (RFC 7643 §3.1), returned always or by default. Whether externalId is unique is
 * the resource's own: 'server' when its owner's database holds it unique among the live resources of an organization
 * (what one SCIM endpoint serves, as a credential acts inside its organization), compared as sent (caseExact).
 */
export function commonAttributes(externalIdUniqueness: 'none' | 'server'): Attribute[] {
  return [
    attr('id', 'Identifier of the resource, assigned by the service provider.', {
      caseExact: true,
      mutability: 'readOnly',
      returned: 'always',
      uniqueness: 'server',
      owner: 'id',
    }),
    attr('externalId', 'Identifier of the resource in the provisioning client.', {
      caseExact: true,
      uniqueness: externalIdUniqueness,
      owner: 'external_id',
    }),
    attr('meta', 'Resource metadata.', {
      type: 'complex',
      mutability: 'readOnly',
      subAttributes: ['resourceType', 'created', 'lastModified', 'location', 'version'].map((n) =>
        attr(n, `The ${n} of the resource.`, {
          mutability: 'readOnly',
          type: n === 'created' || n === 'lastModified' ? 'dateTime' : n === 'location' ? 'reference' : 'string',
          caseExact: true,
          ...(n === 'created' ? { owner: 'create_time' } : n === 'lastModified' ? { owner: 'update_time' } : {}),
        }),
      ),
    }),
  ];
}

export const USER_ATTRIBUTES: Attribute[] = [
  attr('userName', 'Unique identifier for the user, typically used to sign in. Unique case-insensitively.', {
    required: true,
    uniqueness: 'server',
    owner: 'user_name',
  }),
  attr('name', "The components of the user's name.", {
    type: 'complex',
    subAttributes: [
      attr('formatted', 'The full name.', { owner: 'name.formatted' }),
      attr('familyName', 'The family name.', { owner: 'name.family_name' }),
      attr('givenName', 'The given name.', { owner: 'name.given_name' }),
      attr('middleName', 'The middle name(s).', kept('name.middleName')),
      attr('honorificPrefix', 'The honorific prefix(es).', keptOnly('name.honorificPrefix')),
      attr('honorificSuffix', 'The honorific suffix(es).', keptOnly('name.honorificSuffix')),
    ],
  }),
  attr('displayName', 'The name of the user, suitable for display.', { owner: 'display_name' }),
  attr('nickName', 'The casual way to address the user.', kept('nickName')),
  attr('profileUrl', "A URI of the user's online profile.", {
    type: 'reference',
    referenceTypes: ['external'],
    ...keptOnly('profileUrl'),
  }),
  attr('title', 'The user\'s title, such as "Vice President".', kept('title')),
  attr('userType', 'The relationship between the organization and the user.', kept('userType')),
  attr(
    'preferredLanguage',
    'The preferred written or spoken language (RFC 7231 Accept-Language form).',
    kept('preferredLanguage'),
  ),
  attr('locale', 'The default location for localizing dates and numbers, e.g. "en-US".', kept('locale')),
  attr('timezone', 'The user\'s time zone in IANA form, e.g. "America/Chicago"; used for drive times. Default UTC.', {
    caseExact: true,
    canonicalValues: ['UTC', ...Intl.supportedValuesOf('timeZone').filter((z) => z !== 'UTC')],
    owner: 'timezone',
  }),
  attr('active', 'Whether the user may use the platform. false refuses every /v1 request of the user at once.', {
    type: 'boolean',
    owner: 'active',
  }),
  attr('password', 'Accepted and discarded: the platform never stores passwords.', {
    mutability: 'writeOnly',
    returned: 'never',
  }),
  multi('emails', 'E-mail addresses of the user (at most 10).', ['work', 'home', 'other'], {
    owner: 'emails',
    maxValues: 10,
    value: { needed: true },
    // display is accepted (Okta sends it) but not kept: declared read-only, so input values are ignored.
    display: { mutability: 'readOnly', description: 'Ignored on input; not stored.' },
  }),
  multi('phoneNumbers', 'Phone numbers of the user.', ['work', 'home', 'mobile', 'fax', 'pager', 'other'], {
    ...kept('phoneNumbers'),
  }),
  multi('ims', 'Instant messaging addresses of the user.', [], keptOnly('ims')),
  multi('photos', 'URLs of photos of the user.', ['photo', 'thumbnail'], {
    value: { type: 'reference', referenceTypes: ['external'] },
    ...keptOnly('photos'),
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
    ...keptOnly('addresses'),
  }),
  multi('entitlements', 'Entitlements of the user.', [], keptOnly('entitlements')),
  multi('roles', 'Roles of the user (informational; group roles are managed in the platform).', [], keptOnly('roles')),
  multi('x509Certificates', 'X.509 certificates of the user (base64 DER).', [], {
    value: { type: 'binary', caseExact: true },
    ...keptOnly('x509Certificates'),
  }),
];

export const ENTERPRISE_ATTRIBUTES: Attribute[] = [
  attr('employeeNumber', 'Numeric or alphanumeric identifier assigned to a person.', {
    caseExact: true,
    owner: 'enterprise.employeeNumber',
  }),
  attr('costCenter', 'Identifies the name of a cost center.', { owner: 'enterprise.costCenter' }),
  attr('organization', 'Identifies the name of an organization.', { owner: 'enterprise.organization' }),
  attr('division', 'Identifies the name of a division.', { owner: 'enterprise.division' }),
  attr('department', 'Identifies the name of a department.', { owner: 'enterprise.department' }),
  attr('manager', "The user's manager.", {
    type: 'complex',
    subAttributes: [
      attr('value', 'The id of the manager.', { caseExact: true, owner: 'enterprise.manager.value' }),
      attr('$ref', 'The URI of the manager.', { type: 'reference', referenceTypes: ['User'] }),
      attr('displayName', 'The display name of the manager.', { mutability: 'readOnly' }),
    ],
  }),
];

export const GROUP_ATTRIBUTES: Attribute[] = [
  attr('displayName', 'The name of the group (a team of the platform).', { required: true, owner: 'display_name' }),
  attr('members', 'The users in the group. New members become drivers; members who stay keep their roles.', {
    type: 'complex',
    multiValued: true,
    owner: 'members',
    // Groups carry whole teams: as many members per request as the Groups service takes per call.
    maxValues: 10_000,
    subAttributes: [
      attr('value', 'The id of the user.', {
        caseExact: true,
        mutability: 'immutable',
        owner: 'user_id',
        needed: true,
      }),
      attr('$ref', 'The URI of the user.', { type: 'reference', referenceTypes: ['User'], mutability: 'immutable' }),
      attr('display', 'The display name of the user.', { mutability: 'readOnly' }),
      attr('type', 'Always "User": groups do not nest.', { canonicalValues: ['User'], mutability: 'immutable' }),
    ],
  }),
];

export const ENTERPRISE_USER: SchemaDeclaration = {
  id: ENTERPRISE_SCHEMA,
  name: 'EnterpriseUser',
  description: 'Enterprise User (kept as sent)',
  attributes: ENTERPRISE_ATTRIBUTES,
};

/** The User resource, built from its attribute lists (tests build copies with attributes of their own). */
export function userResource(
  attributes: Attribute[] = USER_ATTRIBUTES,
  enterprise: Attribute[] = ENTERPRISE_ATTRIBUTES,
): ResourceDeclaration {
  return {
    name: 'User',
    endpoint: '/Users',
    description: 'A platform user (a driver or group admin).',
    // The Users service's users_organization_external_id_key: unique per organization among live users, as sent.
    common: commonAttributes('server'),
    schema: { id: USER_SCHEMA, name: 'User', description: 'User Account', attributes },
    extensions: [{ ...ENTERPRISE_USER, attributes: enterprise }],
    idPattern: USER_ID_PATTERN.source,
    ignoreUnknownExtensions: false,
    // RFC 7643 §4.1.2: groups is read-only (membership is changed through /Groups); Okta sends "groups": [] on create.
    ignoredOnInput: ['groups'],
  };
}

export function groupResource(attributes: Attribute[] = GROUP_ATTRIBUTES): ResourceDeclaration {
  return {
    name: 'Group',
    endpoint: '/Groups',
    description: 'A team of the platform. Teams are created by the platform; SCIM manages their name and members.',
    // The Groups service keeps a group's externalId without a unique index: two groups may share one.
    common: commonAttributes('none'),
    schema: { id: GROUP_SCHEMA, name: 'Group', description: 'Group (a team of the platform)', attributes },
    extensions: [],
    idPattern: '^[1-9][0-9]*$',
    ignoreUnknownExtensions: true,
    ignoredOnInput: [],
  };
}

export const USER_RESOURCE_TYPE = userResource();
export const GROUP_RESOURCE_TYPE = groupResource();

/** RFC 7643 §2.4: "primary" true appears at most once among the values; owners and SCIM report it alike. */
export function extraPrimary(
  attribute: Attribute,
  values: unknown[],
): { field: string; description: string } | undefined {
  const primaries = values.filter((v) => (v as { primary?: unknown } | null)?.primary === true).length;
  return primaries > 1 ? { field: attribute.name, description: 'at most one primary value' } : undefined;
}

/**
 * The top-level attributes no two live resources of an organization share (uniqueness other than 'none'), by their
 * lower-case names: an equality filter on one matches at most one.
 */
export function uniqueAttributes(resource: ResourceDeclaration): Set<string> {
  return new Set(
    [...resource.common, ...resource.schema.attributes]
      .filter((a) => a.uniqueness !== 'none')
      .map((a) => a.name.toLowerCase()),
  );
}

export function findAttribute(list: Attribute[], name: string): Attribute | undefined {
  const lower = name.toLowerCase();
  return list.find((a) => a.name.toLowerCase() === lower);
}

/** An attribute as /Schemas serves it: RFC 7643's fields only. */
export function schemaAttribute(attribute: Attribute): SchemaAttribute {
  const { owner: _owner, filterable: _filterable, maxValues: _maxValues, needed: _needed, ...served } = attribute;
  return served.subAttributes ? { ...served, subAttributes: served.subAttributes.map(schemaAttribute) } : served;
}
