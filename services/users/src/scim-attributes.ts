import type { AttributeMap, ScalarAttribute } from '@mileage/runtime';

const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:user';

const text = (sql: string, caseExact = false): ScalarAttribute => ({ kind: 'scalar', sql, type: 'string', caseExact });

/**
 * The user attributes a SCIM filter may name (lower-case canonical paths) and the column expressions behind
 * them. Case sensitivity follows RFC 7643 §4.1 (userName, e-mails, names: caseExact false; id, externalId: true);
 * the case-insensitive ones are compared as lower(column) so that the lower(...) indexes serve them.
 */
export const USER_FILTER_ATTRIBUTES: AttributeMap = {
  id: text('users.id', true),
  username: text('users.user_name'),
  externalid: text('users.external_id', true),
  displayname: text('users.display_name'),
  'name.givenname': text("nullif(users.given_name, '')"),
  'name.familyname': text("nullif(users.family_name, '')"),
  'name.formatted': text('users.formatted_name'),
  timezone: text('users.timezone', true),
  active: { kind: 'scalar', sql: 'users.active', type: 'boolean', caseExact: true },
  'meta.created': { kind: 'scalar', sql: 'users.created_at', type: 'datetime', caseExact: true },
  'meta.lastmodified': { kind: 'scalar', sql: 'users.modified_at', type: 'datetime', caseExact: true },
  emails: {
    kind: 'multi',
    elements: 'jsonb_array_elements(users.emails) AS email',
    sub: {
      value: text(`(email->>'value')`),
      type: text(`(email->>'type')`),
      primary: { kind: 'scalar', sql: `(email->>'primary')::boolean`, type: 'boolean', caseExact: true },
    },
    // The expression of users_email_values_idx: "some address equals" as a GIN containment test.
    eqShortcut: {
      value: `(lower(jsonb_path_query_array(users.emails, '$[*].value')::text)::jsonb @> jsonb_build_array(lower(?)))`,
    },
  },
  [`${ENTERPRISE}:employeenumber`]: text(`(users.enterprise->>'employeeNumber')`, true),
  [`${ENTERPRISE}:costcenter`]: text(`(users.enterprise->>'costCenter')`),
  [`${ENTERPRISE}:organization`]: text(`(users.enterprise->>'organization')`),
  [`${ENTERPRISE}:division`]: text(`(users.enterprise->>'division')`),
  [`${ENTERPRISE}:department`]: text(`(users.enterprise->>'department')`),
  [`${ENTERPRISE}:manager.value`]: text(`(users.enterprise->'manager'->>'value')`, true),
};
