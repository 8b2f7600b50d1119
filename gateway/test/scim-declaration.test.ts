// Adding a SCIM user attribute is one declaration: a throw-away attribute declared in a test copy of the User reaches
// /Schemas, the OpenAPI document's ScimUser, the filter table (and the owner's SQL) and request validation.
import { Discovery, normalizeBody, parseFilter, resourceSchema, toOwnerFilter } from '@mileage/scim';
import {
  attr,
  filterSchema,
  filterToSql,
  GROUP_RESOURCE_TYPE,
  sqlFilterTable,
  USER_ATTRIBUTES,
  USER_SCHEMA,
  userResource,
} from '@mileage/scim-domain';
import { USER_COLUMNS } from '@mileage/users';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { scimSchemas } from '@mileage/gateway';

const badge = attr('badgeNumber', 'The number on the driver’s badge.', {
  caseExact: true,
  owner: 'scim_attributes.badgeNumber',
});
const withBadge = userResource([...USER_ATTRIBUTES, badge]);

describe('a SCIM attribute declared once', () => {
  test('is served by /Schemas with its RFC 7643 fields', () => {
    const schema = new Discovery('http://127.0.0.1:8080/scim/v2', [withBadge, GROUP_RESOURCE_TYPE]).schemas(
      USER_SCHEMA,
    );
    const served = (schema as { attributes: { name: string }[] }).attributes.find((a) => a.name === 'badgeNumber');
    assert.deepEqual(served, {
      name: 'badgeNumber',
      type: 'string',
      multiValued: false,
      description: 'The number on the driver’s badge.',
      required: false,
      caseExact: true,
      mutability: 'readWrite',
      returned: 'default',
      uniqueness: 'none',
    });
    // The real declaration does not have it.
    const real = new Discovery('http://127.0.0.1:8080/scim/v2').schemas(USER_SCHEMA) as {
      attributes: { name: string }[];
    };
    assert.equal(
      real.attributes.some((a) => a.name === 'badgeNumber'),
      false,
    );
  });

  test('is described in the OpenAPI document’s ScimUser', () => {
    const { ScimUser } = scimSchemas({ user: withBadge, group: GROUP_RESOURCE_TYPE });
    assert.deepEqual(ScimUser.properties.badgeNumber, {
      type: 'string',
      description: 'The number on the driver’s badge.',
    });
    assert.equal('badgeNumber' in scimSchemas().ScimUser.properties, false);
  });

  test('can be filtered on, with its case rule, over the column the owner keeps it in', () => {
    const schema = filterSchema(withBadge);
    const typed = toOwnerFilter(parseFilter('BADGENUMBER eq "B-7"'), schema);
    const condition = filterToSql(typed, sqlFilterTable(schema, USER_COLUMNS));
    // caseExact: compared as is, no lower(); kept as sent in users.scim_attributes.
    assert.deepEqual(condition, { sql: "((users.scim_attributes->>'badgeNumber') = ?)", bindings: ['B-7'] });
    assert.throws(() => toOwnerFilter(parseFilter('badgeNumber eq "B-7"'), filterSchema(userResource())), {
      detail: 'Unknown attribute "badgeNumber" in the filter',
    });
  });

  test('is read and type-checked in request bodies', () => {
    const schema = resourceSchema(withBadge);
    assert.deepEqual(normalizeBody({ userName: 'a@x', BadgeNumber: 'B-7' }, schema), {
      userName: 'a@x',
      badgeNumber: 'B-7',
    });
    assert.throws(() => normalizeBody({ userName: 'a@x', badgeNumber: 7 }, schema), {
      scimType: 'invalidValue',
      detail: '"badgeNumber" must be a string',
    });
    assert.throws(() => normalizeBody({ userName: 'a@x', badgeNumber: 'B-7' }, resourceSchema(userResource())), {
      scimType: 'invalidSyntax',
    });
  });
});
