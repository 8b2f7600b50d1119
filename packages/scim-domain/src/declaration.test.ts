// Pure functions: the declarations in, the filter table, the owner's SQL table and /Schemas attributes out.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  attr,
  findAttribute,
  GROUP_RESOURCE_TYPE,
  isModelled,
  schemaAttribute,
  uniqueAttributes,
  userResource,
  USER_RESOURCE_TYPE,
} from './declaration';
import { schemaDocuments } from './discovery';
import { filterSchema, filterableType } from './filter-table';
import { jsonbElements, sqlFilterTable } from './filter-sql';

const USERS = filterSchema(USER_RESOURCE_TYPE);
const GROUPS = filterSchema(GROUP_RESOURCE_TYPE);

describe('the filter table', () => {
  test('top-level attributes, multi-valued ones and their sub-attributes, with the owner field of each', () => {
    assert.equal(filterableType(USERS, 'username'), 'string');
    assert.equal(filterableType(USERS, 'active'), 'boolean');
    assert.equal(filterableType(USERS, 'meta.created'), 'dateTime');
    assert.equal(filterableType(USERS, 'phonenumbers'), 'multi');
    assert.equal(filterableType(USERS, 'phonenumbers.primary'), 'boolean');
    assert.equal(filterableType(USERS, 'phonenumbers.display'), undefined);
    assert.equal(filterableType(GROUPS, 'externalid'), 'string');
    assert.equal(filterableType(GROUPS, 'title'), undefined);
    assert.deepEqual(USERS.attributes['name.givenname'], {
      kind: 'scalar',
      type: 'string',
      caseExact: false,
      owner: 'name.given_name',
    });
    assert.equal(
      USERS.attributes['urn:ietf:params:scim:schemas:extension:enterprise:2.0:user:manager.value']?.kind,
      'scalar',
    );
    assert.equal(GROUPS.attributes.members?.kind === 'multi' && GROUPS.attributes.members.sub.value?.owner, 'user_id');
  });

  test('declared but not filterable (or not kept) is refused as unsupported, not unknown', () => {
    for (const path of ['password', 'ims', 'ims.value', 'groups', 'name.honorificprefix', 'emails.display'])
      assert.ok(USERS.unfilterable.has(path), path);
    assert.ok(GROUPS.unfilterable.has('members.display'));
  });
});

describe('sqlFilterTable', () => {
  test('documents kept as sent are read by path; a field the owner has no column for fails at once', () => {
    const table = sqlFilterTable(USERS, {
      scalars: Object.fromEntries(
        ['id', 'user_name', 'external_id', 'display_name', 'name.given_name', 'name.family_name', 'name.formatted']
          .concat(['timezone', 'active', 'create_time', 'update_time'])
          .map((f) => [f, `u.${f.replace('.', '_')}`]),
      ),
      multi: { emails: jsonbElements('u.emails', 'e') },
      documents: { scim_attributes: 'u.extra', enterprise: 'u.ent' },
    });
    assert.equal(table.title?.kind === 'scalar' && table.title.sql, "(u.extra->>'title')");
    assert.equal(
      table['name.middlename']?.kind === 'scalar' && table['name.middlename'].sql,
      "(u.extra->'name'->>'middleName')",
    );
    const emails = table.emails?.kind === 'multi' ? table.emails.sub.primary?.sql : undefined;
    assert.equal(emails, "(e->>'primary')::boolean");
    assert.throws(() => sqlFilterTable(USERS, { scalars: {}, multi: {}, documents: {} }), /no column for "id"/);
  });
});

describe('schemaAttribute', () => {
  test('serves RFC 7643 fields only, also in sub-attributes', () => {
    const emails = schemaAttribute(findAttribute(USER_RESOURCE_TYPE.schema.attributes, 'emails')!);
    assert.equal('maxValues' in emails || 'owner' in emails, false);
    assert.equal(
      emails.subAttributes!.some((s) => 'owner' in s),
      false,
    );
    const custom = userResource([attr('badge', 'A badge.', { owner: 'scim_attributes.badge' })]);
    assert.deepEqual(Object.keys(schemaAttribute(custom.schema.attributes[0]!)), [
      'name',
      'type',
      'multiValued',
      'description',
      'required',
      'caseExact',
      'mutability',
      'returned',
      'uniqueness',
    ]);
  });
});

describe('uniqueness', () => {
  test("/Schemas declares externalId as each owner's database holds it: a user's unique per organization, a group's not", () => {
    const served = schemaDocuments([USER_RESOURCE_TYPE, GROUP_RESOURCE_TYPE], 'http://scim.test/scim/v2');
    const externalId = (id: string) =>
      served.find((s) => s.id === id)!.attributes.find((a) => a.name === 'externalId')!;
    assert.deepEqual(
      [externalId(USER_RESOURCE_TYPE.schema.id).uniqueness, externalId(USER_RESOURCE_TYPE.schema.id).caseExact],
      ['server', true],
    );
    assert.equal(externalId(GROUP_RESOURCE_TYPE.schema.id).uniqueness, 'none');
  });

  test('the attributes an equality filter matches at most one of are the declared unique ones', () => {
    assert.deepEqual([...uniqueAttributes(USER_RESOURCE_TYPE)].sort(), ['externalid', 'id', 'username']);
    assert.deepEqual([...uniqueAttributes(GROUP_RESOURCE_TYPE)], ['id']);
  });
});

describe('isModelled', () => {
  test('an owner field of its own is modelled; kept as sent (scim_attributes) or not kept at all is not', () => {
    const attribute = (name: string) => findAttribute(USER_RESOURCE_TYPE.schema.attributes, name)!;
    assert.deepEqual(
      ['userName', 'emails', 'title', 'phoneNumbers', 'password'].map((n) => isModelled(attribute(n))),
      [true, true, false, false, false],
    );
  });
});
