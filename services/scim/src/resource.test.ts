// Pure functions: a body read into a canonical document, a representation projected, a selection checked.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ScimError } from './errors';
import { GROUP_RESOURCE } from './groups';
import { checkSelection, normalizeBody, project } from './resource';
import { ENTERPRISE_SCHEMA, USER_SCHEMA } from './schemas';
import { USER_RESOURCE } from './users';

function scimError(run: () => unknown, scimType: string, message: RegExp) {
  assert.throws(run, (err: unknown) => {
    assert.ok(err instanceof ScimError);
    assert.equal(err.status, 400);
    assert.equal(err.scimType, scimType);
    assert.match(err.detail, message);
    return true;
  });
}

describe('normalizeBody', () => {
  test('names in any case are spelled as in the schema; "False" is a boolean; read-only and write-only are dropped', () => {
    assert.deepEqual(
      normalizeBody(
        {
          schemas: [USER_SCHEMA],
          id: 'ignored',
          meta: { version: 'W/"9"' },
          USERNAME: 'bob@example.com',
          Active: 'False',
          password: 'S3cret',
          NAME: { GivenName: 'Bob' },
          phoneNumbers: { value: '+1 555 0100', type: 'work' },
          groups: [],
        },
        USER_RESOURCE,
      ),
      {
        userName: 'bob@example.com',
        active: false,
        name: { givenName: 'Bob' },
        phoneNumbers: [{ value: '+1 555 0100', type: 'work' }],
      },
    );
  });

  test('URN-prefixed core attributes and the enterprise extension (a bare manager id is its value)', () => {
    assert.deepEqual(
      normalizeBody(
        {
          [`${USER_SCHEMA}:title`]: 'Driver',
          [ENTERPRISE_SCHEMA.toLowerCase()]: { department: 'Ops', manager: 'AliceAdm01' },
        },
        USER_RESOURCE,
      ),
      { title: 'Driver', [ENTERPRISE_SCHEMA]: { department: 'Ops', manager: { value: 'AliceAdm01' } } },
    );
  });

  test('unknown attributes and schemas are invalidSyntax; wrong types are invalidValue; groups ignore other schemas', () => {
    scimError(() => normalizeBody({ favouriteColour: 'blue' }, USER_RESOURCE), 'invalidSyntax', /Unknown attribute/);
    scimError(() => normalizeBody({ 'urn:example:x': {} }, USER_RESOURCE), 'invalidSyntax', /not a schema/);
    scimError(() => normalizeBody({ active: 'maybe' }, USER_RESOURCE), 'invalidValue', /boolean/);
    scimError(() => normalizeBody({ externalId: 7 }, USER_RESOURCE), 'invalidValue', /externalId/);
    scimError(() => normalizeBody([], USER_RESOURCE), 'invalidSyntax', /JSON object/);
    assert.deepEqual(normalizeBody({ displayName: 'Team', 'urn:example:x': { a: 1 } }, GROUP_RESOURCE), {
      displayName: 'Team',
    });
  });
});

describe('project and checkSelection', () => {
  const user = {
    schemas: [USER_SCHEMA],
    id: 'Bob0000001',
    userName: 'bob@example.com',
    name: { givenName: 'Bob', familyName: 'Driver' },
    emails: [{ value: 'bob@example.com', type: 'work', primary: true }],
    [ENTERPRISE_SCHEMA]: { department: 'Ops', costCenter: '7' },
  };

  test('attributes keeps what is named (sub-attributes too) and always id and schemas', () => {
    assert.deepEqual(project(user, USER_RESOURCE, 'name.givenName,emails.value'), {
      schemas: [USER_SCHEMA],
      id: 'Bob0000001',
      name: { givenName: 'Bob' },
      emails: [{ value: 'bob@example.com' }],
    });
    assert.deepEqual(project(user, USER_RESOURCE, `${ENTERPRISE_SCHEMA}:department`), {
      schemas: [USER_SCHEMA],
      id: 'Bob0000001',
      [ENTERPRISE_SCHEMA]: { department: 'Ops' },
    });
  });

  test('excludedAttributes drops what is named, never id', () => {
    assert.deepEqual(project(user, USER_RESOURCE, undefined, 'emails,name.familyName,id'), {
      schemas: [USER_SCHEMA],
      id: 'Bob0000001',
      userName: 'bob@example.com',
      name: { givenName: 'Bob' },
      [ENTERPRISE_SCHEMA]: { department: 'Ops', costCenter: '7' },
    });
    assert.equal(project(user, USER_RESOURCE), user);
  });

  test('a selection naming an unknown attribute is invalidValue', () => {
    assert.doesNotThrow(() => checkSelection('userName,meta.version,phoneNumbers', USER_RESOURCE, 'attributes'));
    scimError(() => checkSelection('userNmae', USER_RESOURCE, 'attributes'), 'invalidValue', /unknown attribute/);
    scimError(() => checkSelection('title', GROUP_RESOURCE, 'excludedAttributes'), 'invalidValue', /"title"/);
  });
});
