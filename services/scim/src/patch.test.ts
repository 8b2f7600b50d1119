import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ScimError } from './errors';
import { GROUP_RESOURCE } from './groups';
import { applyPatch, readPatchBody, type PatchOperation } from './patch';
import type { Doc } from './resource';
import { ENTERPRISE_SCHEMA, GROUP_SCHEMA, PATCH_SCHEMA, USER_SCHEMA } from './schemas';
import { USER_RESOURCE } from './users';

const ID = 'QuinnQrk01';
const user = (): Doc => ({
  userName: 'quinn@contoso.example',
  active: true,
  name: { givenName: 'Quinn', familyName: 'Quirk', formatted: 'Quinn Quirk' },
  emails: [
    { value: 'quinn@contoso.example', type: 'work', primary: true },
    { value: 'quinn@home.example', type: 'home' },
  ],
  [ENTERPRISE_SCHEMA]: { department: 'Fleet' },
});
const group = (): Doc => ({
  displayName: 'Demo Team',
  members: [{ value: 'AliceAdm01' }, { value: 'BobDriver1' }, { value: 'CarolDrv01' }],
});
const patchUser = (...operations: PatchOperation[]) => applyPatch(user(), operations, USER_RESOURCE, ID);
const patchGroup = (...operations: PatchOperation[]) => applyPatch(group(), operations, GROUP_RESOURCE, '1');
const members = (doc: Doc) => (doc.members as Doc[]).map((m) => m.value);

/** Asserts that `fn` throws a SCIM error with this status and scimType. */
function refuses(fn: () => unknown, status: number, scimType?: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ScimError);
    assert.deepEqual([err.status, err.scimType], [status, scimType]);
    return true;
  });
}

describe('readPatchBody', () => {
  test('op in any case, as Entra ID sends "Replace" and "Add"', () => {
    const ops = readPatchBody({
      schemas: [PATCH_SCHEMA],
      Operations: [
        { op: 'Replace', path: 'active', value: false },
        { op: 'ADD', path: 'title', value: 'Dispatcher' },
        { op: 'remove', path: 'title' },
      ],
    });
    assert.deepEqual(
      ops.map((o) => o.op),
      ['replace', 'add', 'remove'],
    );
  });

  test('member names in any case; schemas may list more than the PatchOp URN', () => {
    const ops = readPatchBody({
      SCHEMAS: [PATCH_SCHEMA, 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group'],
      operations: [{ OP: 'add', PATH: ' members ', VALUE: [{ value: 'AliceAdm01' }] }],
    });
    assert.deepEqual(ops, [{ op: 'add', path: 'members', value: [{ value: 'AliceAdm01' }] }]);
  });

  test('refuses what is not a PatchOp', () => {
    refuses(() => readPatchBody([]), 400, 'invalidSyntax');
    refuses(
      () => readPatchBody({ schemas: [USER_SCHEMA], Operations: [{ op: 'add', value: {} }] }),
      400,
      'invalidSyntax',
    );
    refuses(() => readPatchBody({ Operations: [] }), 400, 'invalidSyntax');
    refuses(() => readPatchBody({ Operations: [{ op: 'merge', value: 1 }] }), 400, 'invalidSyntax');
    refuses(() => readPatchBody({ Operations: [{ op: 'add', path: 'title' }] }), 400, 'invalidValue');
    refuses(() => readPatchBody({ Operations: [{ op: 'remove' }] }), 400, 'noTarget');
    refuses(() => readPatchBody({ Operations: [{ op: 'add', path: '', value: 1 }] }), 400, 'invalidPath');
  });
});

describe('single-valued attributes', () => {
  test('booleans as "True" / "False" strings', () => {
    assert.equal(patchUser({ op: 'replace', path: 'active', value: 'False' }).active, false);
    assert.equal(patchUser({ op: 'replace', path: 'active', value: 'True' }).active, true);
    refuses(() => patchUser({ op: 'replace', path: 'active', value: 'no' }), 400, 'invalidValue');
  });

  test('add / replace set the value, remove unassigns it, null unassigns it too', () => {
    assert.equal(patchUser({ op: 'add', path: 'title', value: 'Dispatcher' }).title, 'Dispatcher');
    assert.ok(!('displayName' in patchUser({ op: 'replace', path: 'displayName', value: null })));
    const removed = patchUser({ op: 'remove', path: 'name' });
    assert.ok(!('name' in removed));
  });

  test('a complex value keeps the sub-attributes it does not name (RFC 7644 §3.5.2.3)', () => {
    const doc = patchUser({ op: 'replace', path: 'name', value: { familyName: 'Quest' } });
    assert.deepEqual(doc.name, { givenName: 'Quinn', familyName: 'Quest', formatted: 'Quinn Quirk' });
  });

  test('a sub-attribute path; the parent goes when its last sub-attribute does', () => {
    assert.equal((patchUser({ op: 'replace', path: 'name.givenName', value: 'Q' }).name as Doc).givenName, 'Q');
    const doc = patchUser(
      { op: 'remove', path: 'name.givenName' },
      { op: 'remove', path: 'name.familyName' },
      { op: 'remove', path: 'name.formatted' },
    );
    assert.ok(!('name' in doc));
  });

  test('read-only attributes and a different id are refused; Okta echoing the same id is not', () => {
    refuses(() => patchUser({ op: 'replace', path: 'meta.created', value: 'x' }), 400, 'mutability');
    refuses(() => patchUser({ op: 'replace', path: 'id', value: 'Other00001' }), 400, 'mutability');
    refuses(() => patchUser({ op: 'remove', path: 'id' }), 400, 'mutability');
    assert.deepEqual(patchUser({ op: 'replace', value: { id: ID, displayName: 'Q' } }).displayName, 'Q');
  });

  test('paths that name nothing are invalidPath', () => {
    refuses(() => patchUser({ op: 'add', path: 'nickName2', value: 'x' }), 400, 'invalidPath');
    refuses(() => patchUser({ op: 'add', path: 'name.middle_name', value: 'x' }), 400, 'invalidPath');
    refuses(() => patchUser({ op: 'add', path: 'title[value eq "x"]', value: 'x' }), 400, 'invalidPath');
  });
});

describe('replace / add without a path (Entra ID, Okta)', () => {
  test('dotted keys, filtered keys and plain keys each apply as a path', () => {
    const doc = patchUser({
      op: 'add',
      value: {
        'name.givenName': 'Quin',
        'name.familyName': 'Quark',
        displayName: 'Quin Quark',
        'emails[type eq "work"].value': 'quin@contoso.example',
      },
    });
    assert.deepEqual(doc.name, { givenName: 'Quin', familyName: 'Quark', formatted: 'Quinn Quirk' });
    assert.equal(doc.displayName, 'Quin Quark');
    assert.deepEqual((doc.emails as Doc[])[0], { value: 'quin@contoso.example', type: 'work', primary: true });
  });

  test('URN-prefixed keys: core attributes, extension attributes, and the extension as one object', () => {
    const doc = patchUser({
      op: 'replace',
      value: {
        [`${USER_SCHEMA}:title`]: 'Dispatcher',
        [`${ENTERPRISE_SCHEMA}:employeeNumber`]: '1001',
        [ENTERPRISE_SCHEMA.toLowerCase()]: { schemas: [ENTERPRISE_SCHEMA], costCenter: 'C7', manager: 'AliceAdm01' },
      },
    });
    assert.equal(doc.title, 'Dispatcher');
    assert.deepEqual(doc[ENTERPRISE_SCHEMA], {
      department: 'Fleet',
      employeeNumber: '1001',
      costCenter: 'C7',
      manager: { value: 'AliceAdm01' },
    });
  });

  test('schemas and meta in the value are not attributes', () => {
    const doc = patchGroup({
      op: 'replace',
      value: {
        schemas: [GROUP_SCHEMA, 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group'],
        meta: { resourceType: 'Group' },
        displayName: 'Renamed',
      },
    });
    assert.equal(doc.displayName, 'Renamed');
    assert.deepEqual(members(doc), ['AliceAdm01', 'BobDriver1', 'CarolDrv01']);
  });

  test('a value that is not an object is refused', () => {
    refuses(() => patchUser({ op: 'replace', value: 'x' }), 400, 'invalidValue');
  });

  test('removing an extension attribute that empties the extension removes the extension', () => {
    const doc = patchUser({ op: 'remove', path: `${ENTERPRISE_SCHEMA}:department` });
    assert.ok(!(ENTERPRISE_SCHEMA in doc));
    assert.ok(!(ENTERPRISE_SCHEMA in patchUser({ op: 'remove', path: ENTERPRISE_SCHEMA })));
  });
});

describe('multi-valued attributes without a filter', () => {
  test('add appends new values and updates one already there, without duplicating it', () => {
    const doc = patchGroup({ op: 'add', path: 'members', value: [{ value: 'alicEADM01' }, { value: 'DaveSolo01' }] });
    // Member ids are case-exact: a differently cased id is another user.
    assert.deepEqual(members(doc), ['AliceAdm01', 'BobDriver1', 'CarolDrv01', 'alicEADM01', 'DaveSolo01']);
    const again = patchGroup({ op: 'add', path: 'members', value: [{ value: 'BobDriver1' }] });
    assert.deepEqual(members(again), ['AliceAdm01', 'BobDriver1', 'CarolDrv01']);
  });

  test('"$ref": null in members is accepted (Entra ID sends it)', () => {
    const doc = patchGroup({ op: 'add', path: 'members', value: [{ $ref: null, value: 'DaveSolo01' }] });
    assert.deepEqual((doc.members as Doc[]).at(-1), { value: 'DaveSolo01' });
  });

  test('remove of members with a value array removes just those', () => {
    const doc = patchGroup({
      op: 'remove',
      path: 'members',
      value: [{ $ref: null, value: 'BobDriver1' }, { value: 'NotAMember' }],
    });
    assert.deepEqual(members(doc), ['AliceAdm01', 'CarolDrv01']);
  });

  test('remove without a value removes all; replace sets exactly the list sent', () => {
    assert.ok(!('members' in patchGroup({ op: 'remove', path: 'members' })));
    assert.deepEqual(members(patchGroup({ op: 'replace', path: 'members', value: [{ value: 'DaveSolo01' }] })), [
      'DaveSolo01',
    ]);
    assert.ok(!('members' in patchGroup({ op: 'replace', path: 'members', value: [] })));
  });

  test('e-mail values compare case-insensitively; a new primary demotes the old one', () => {
    const doc = patchUser({
      op: 'add',
      path: 'emails',
      value: [
        { value: 'QUINN@HOME.EXAMPLE', type: 'home', primary: true },
        { value: 'q@other.example', type: 'other' },
      ],
    });
    assert.deepEqual(doc.emails, [
      { value: 'quinn@contoso.example', type: 'work', primary: false },
      { value: 'QUINN@HOME.EXAMPLE', type: 'home', primary: true },
      { value: 'q@other.example', type: 'other' },
    ]);
  });

  test('a sub-attribute without a filter applies to every value', () => {
    const doc = patchUser({ op: 'remove', path: 'emails.type' });
    assert.deepEqual(doc.emails, [{ value: 'quinn@contoso.example', primary: true }, { value: 'quinn@home.example' }]);
    const typed = patchUser({ op: 'replace', path: 'emails.type', value: 'other' });
    assert.deepEqual(
      (typed.emails as Doc[]).map((e) => e.type),
      ['other', 'other'],
    );
  });
});

describe('value-filter paths', () => {
  test('emails[type eq "work"].value replaces just that element\'s value', () => {
    const doc = patchUser({ op: 'replace', path: 'emails[type eq "work"].value', value: 'new@contoso.example' });
    assert.deepEqual(doc.emails, [
      { value: 'new@contoso.example', type: 'work', primary: true },
      { value: 'quinn@home.example', type: 'home' },
    ]);
  });

  test('a filter that selects nothing creates the element it describes (Entra ID on users without a work address)', () => {
    const doc = patchUser({ op: 'replace', path: 'emails[type eq "other"].value', value: 'q@other.example' });
    assert.deepEqual((doc.emails as Doc[]).at(-1), { type: 'other', value: 'q@other.example' });
    const both = patchUser({
      op: 'add',
      path: 'phoneNumbers[type eq "mobile" and primary eq true]',
      value: { value: '+1 555' },
    });
    assert.deepEqual(both.phoneNumbers, [{ type: 'mobile', primary: true, value: '+1 555' }]);
    refuses(
      () => patchUser({ op: 'replace', path: 'emails[type eq "pager" or type eq "fax"].value', value: 'x@y.example' }),
      400,
      'noTarget',
    );
  });

  test('replace of a selected element replaces it; add merges into it', () => {
    const replaced = patchUser({ op: 'replace', path: 'emails[type eq "home"]', value: { value: 'h@home.example' } });
    assert.deepEqual((replaced.emails as Doc[])[1], { value: 'h@home.example' });
    const merged = patchUser({ op: 'add', path: 'emails[type eq "home"]', value: { value: 'h@home.example' } });
    assert.deepEqual((merged.emails as Doc[])[1], { value: 'h@home.example', type: 'home' });
  });

  test('members[value eq "…"] removes that member; a removed sub-attribute drops an element left with only type', () => {
    assert.deepEqual(members(patchGroup({ op: 'remove', path: 'members[value eq "CarolDrv01"]' })), [
      'AliceAdm01',
      'BobDriver1',
    ]);
    const doc = patchUser({ op: 'remove', path: 'emails[type eq "home"].value' });
    assert.deepEqual(doc.emails, [{ value: 'quinn@contoso.example', type: 'work', primary: true }]);
  });

  test('attribute names, filter attributes and operators in any case', () => {
    const doc = patchUser({
      op: 'Replace'.toLowerCase() as 'replace',
      path: 'EMAILS[TYPE EQ "work"].VALUE',
      value: 'w@x.example',
    });
    assert.equal((doc.emails as Doc[])[0]!.value, 'w@x.example');
  });
});

describe('all or nothing', () => {
  test('the document passed in is never changed, also when a later operation fails', () => {
    const current = user();
    const before = structuredClone(current);
    assert.throws(() =>
      applyPatch(
        current,
        [
          { op: 'replace', path: 'displayName', value: 'Changed' },
          { op: 'replace', path: 'id', value: 'Other00001' },
        ],
        USER_RESOURCE,
        ID,
      ),
    );
    assert.deepEqual(current, before);
  });
});
