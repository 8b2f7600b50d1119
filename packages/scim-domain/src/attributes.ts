// Every SCIM attribute a filter may name, declared once: its canonical path (lower case), its type, its RFC 7643 case
// rule and the SQL expression that reads it in its owner's tables. The SCIM service reads the names, types and case
// rules to type a filter; the owner (Users, Groups) runs the typed filter over the same declarations with filterToSql.

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';

/** At most this many terms (comparisons, and/or/not, value paths) in one filter. */
export const MAX_FILTER_TERMS = 64;

export type ScalarType = 'string' | 'boolean' | 'dateTime';

export interface ScalarAttribute {
  kind: 'scalar';
  type: ScalarType;
  /** RFC 7643 caseExact: false compares lower(sql) with lower(value), matching a lower(...) index. */
  caseExact: boolean;
  /** SQL expression of the value; for sub-attributes it is written in terms of the element alias. */
  sql: string;
}

export interface MultiValuedAttribute {
  kind: 'multi';
  /** A FROM item producing one row per element, e.g. `jsonb_array_elements(u.emails) AS el`. */
  elements: string;
  /** Sub-attributes by lower-case name, in terms of the element alias. */
  sub: Record<string, ScalarAttribute>;
  /**
   * Index-friendly forms of `attr.sub eq value` (e.g. a GIN containment test); the value arrives as the single
   * binding. Used for top-level comparisons, where "some element equals" is exactly what eq means.
   */
  eqShortcut?: Record<string, string>;
}

/** Canonical lower-case attribute path → how it is stored. */
export type AttributeMap = Record<string, ScalarAttribute | MultiValuedAttribute>;

export interface FilterSchema {
  /** Core schema URN: "urn:…:User:userName" names userName. */
  core: string;
  attributes: AttributeMap;
  /** Lower-case paths the schema has but a filter may not name (refused as unsupported, not as unknown). */
  unfilterable: Set<string>;
}

export type FilterableType = ScalarType | 'multi';

/** The type of a canonical lower-case path ("emails" is multi, "emails.value" a string), if it can be filtered. */
export function filterableType(schema: FilterSchema, path: string): FilterableType | undefined {
  const direct = schema.attributes[path];
  if (direct) return direct.kind === 'multi' ? 'multi' : direct.type;
  const dot = path.lastIndexOf('.');
  const parent = dot > 0 ? schema.attributes[path.slice(0, dot)] : undefined;
  return parent?.kind === 'multi' ? parent.sub[path.slice(dot + 1)]?.type : undefined;
}

const scalar = (sql: string, type: ScalarType, caseExact: boolean): ScalarAttribute => ({
  kind: 'scalar',
  sql,
  type,
  caseExact,
});
/** RFC 7643 §4.1: userName, names, e-mails, title, … are caseExact false; id and externalId true. */
const text = (sql: string, caseExact = false) => scalar(sql, 'string', caseExact);
const flag = (sql: string) => scalar(sql, 'boolean', true);
const time = (sql: string) => scalar(sql, 'dateTime', true);
/** A multi-valued attribute with RFC 7643's value / type / primary, stored as a jsonb array. */
const multi = (array: string, alias: string): MultiValuedAttribute => ({
  kind: 'multi',
  elements: `jsonb_array_elements(coalesce(${array}, '[]'::jsonb)) AS ${alias}`,
  sub: {
    value: text(`(${alias}->>'value')`),
    type: text(`(${alias}->>'type')`),
    primary: flag(`(${alias}->>'primary')::boolean`),
  },
});

const ENTERPRISE = ENTERPRISE_SCHEMA.toLowerCase();
/** The attributes the platform does not model, kept as sent in users.scim_attributes. */
const kept = (name: string) => text(`(users.scim_attributes->>'${name}')`);

/** User attributes (Users service, table users.users). */
export const USER_FILTER: FilterSchema = {
  core: USER_SCHEMA,
  attributes: {
    id: text('users.id', true),
    username: text('users.user_name'),
    externalid: text('users.external_id', true),
    displayname: text('users.display_name'),
    'name.givenname': text("nullif(users.given_name, '')"),
    'name.familyname': text("nullif(users.family_name, '')"),
    'name.formatted': text('users.formatted_name'),
    'name.middlename': text(`(users.scim_attributes->'name'->>'middleName')`),
    timezone: text('users.timezone', true),
    active: flag('users.active'),
    title: kept('title'),
    nickname: kept('nickName'),
    usertype: kept('userType'),
    preferredlanguage: kept('preferredLanguage'),
    locale: kept('locale'),
    'meta.created': time('users.created_at'),
    'meta.lastmodified': time('users.modified_at'),
    emails: {
      ...multi('users.emails', 'email'),
      // The expression of users_email_values_idx: "some address equals" as a GIN containment test.
      eqShortcut: {
        value: `(lower(jsonb_path_query_array(users.emails, '$[*].value')::text)::jsonb @> jsonb_build_array(lower(?)))`,
      },
    },
    phonenumbers: multi(`users.scim_attributes->'phoneNumbers'`, 'phone'),
    [`${ENTERPRISE}:employeenumber`]: text(`(users.enterprise->>'employeeNumber')`, true),
    [`${ENTERPRISE}:costcenter`]: text(`(users.enterprise->>'costCenter')`),
    [`${ENTERPRISE}:organization`]: text(`(users.enterprise->>'organization')`),
    [`${ENTERPRISE}:division`]: text(`(users.enterprise->>'division')`),
    [`${ENTERPRISE}:department`]: text(`(users.enterprise->>'department')`),
    [`${ENTERPRISE}:manager.value`]: text(`(users.enterprise->'manager'->>'value')`, true),
  },
  unfilterable: new Set([
    'profileurl',
    'ims',
    'photos',
    'addresses',
    'entitlements',
    'roles',
    'x509certificates',
    'name.honorificprefix',
    'name.honorificsuffix',
    'password',
    'groups',
  ]),
};

/** Group attributes (Groups service, table groups.teams and its members); displayName is caseExact false. */
export const GROUP_FILTER: FilterSchema = {
  core: GROUP_SCHEMA,
  attributes: {
    id: text('teams.id::text', true),
    displayname: text('teams.display_name'),
    externalid: text('teams.external_id', true),
    'meta.created': time('teams.created_at'),
    'meta.lastmodified': time('teams.modified_at'),
    members: {
      kind: 'multi',
      elements: '(SELECT user_id::text AS user_id FROM team_members WHERE team_members.team_id = teams.id) AS member',
      sub: { value: text('member.user_id', true) },
    },
  },
  unfilterable: new Set(['members.display', 'members.type', 'members.$ref']),
};
