// The request sequences that Microsoft Entra ID and Okta document for SCIM 2.0 provisioning, request by request,
// through the gateway to the real SCIM, Users and Groups services. Sources:
// - Microsoft Learn, "Tutorial: Develop and plan provisioning for a SCIM endpoint in Microsoft Entra ID"
//   (user and group operations), and "Known issues and resolutions with SCIM 2.0 protocol compliance of the
//   Microsoft Entra user provisioning service" (booleans as strings, dotted no-path keys, member removal by value).
// - Okta Developer, "SCIM 2.0 protocol reference" / "Build a SCIM provisioning integration" (user and group operations).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import request from 'supertest';
import { SCIM_URN, scimSuite } from './harness';

const { CORE_USER, ENTERPRISE, CORE_GROUP, PATCH_OP, LIST } = SCIM_URN;
const suite = scimSuite();

/** One request as the identity provider sends it (application/scim+json, bearer token). */
function send(method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string, body?: unknown) {
  const agent = request(suite.app);
  const r = agent[method](`/scim/v2${path}`)
    .set('Authorization', `Bearer ${suite.token}`)
    .set('Accept', 'application/scim+json');
  return body === undefined
    ? r
    : r.set('Content-Type', 'application/scim+json; charset=utf-8').send(JSON.stringify(body));
}
const q = (filter: string) => encodeURIComponent(filter);

describe('Microsoft Entra ID provisioning sequence', () => {
  test('users: query, create, read, update multi- and single-valued attributes, disable, delete', async () => {
    const userName = 'Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1';
    // Entra first looks the user up by its matching attribute.
    const absent = await send('get', `/Users?filter=${q(`userName eq "${userName}"`)}`).expect(200);
    assert.deepEqual(absent.body, { schemas: [LIST], totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });

    const created = await send('post', '/Users', {
      schemas: [CORE_USER, ENTERPRISE],
      externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
      userName,
      active: true,
      emails: [{ primary: true, type: 'work', value: 'Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com' }],
      meta: { resourceType: 'User' },
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      roles: [],
    }).expect(201);
    const id = created.body.id as string;
    assert.equal(created.body.externalId, '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef');
    assert.equal(created.body.roles, undefined, 'an empty multi-valued attribute is unassigned');

    const read = await send('get', `/Users/${id}`).expect(200);
    assert.equal(read.body.userName, userName);
    const byName = await send('get', `/Users?filter=${q(`userName eq "${userName.toLowerCase()}"`)}`).expect(200);
    assert.deepEqual(
      byName.body.Resources.map((r: { id: string }) => r.id),
      [id],
    );
    const byExternalId = await send(
      'get',
      `/Users?filter=${q('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')}`,
    ).expect(200);
    assert.equal(byExternalId.body.totalResults, 1);
    const none = await send('get', `/Users?filter=${q('userName eq "non-existent user"')}`).expect(200);
    assert.equal(none.body.totalResults, 0);

    const multi = await send('patch', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@microsoft.com' },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
      ],
    }).expect(200);
    assert.deepEqual(multi.body.emails, [{ value: 'updatedEmail@microsoft.com', type: 'work', primary: true }]);
    assert.equal(multi.body.name.familyName, 'updatedFamilyName');

    const single = await send('patch', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'userName', value: '5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com' }],
    }).expect(200);
    assert.equal(single.body.userName, '5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com');

    const disabled = await send('patch', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'active', value: false }],
    }).expect(200);
    assert.equal(disabled.body.active, false);

    await send('delete', `/Users/${id}`).expect(204);
    await send('get', `/Users/${id}`).expect(404);
  });

  test('known issues: booleans as strings, no-path values with dotted and filtered keys, Add for existing values, the manager as a bare id', async () => {
    const id = (
      await send('post', '/Users', {
        schemas: [CORE_USER, ENTERPRISE],
        userName: 'entra.quirks@contoso.example',
        active: true,
        emails: [],
      }).expect(201)
    ).body.id as string;
    const res = await send('patch', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Replace', path: 'active', value: 'False' },
        {
          op: 'Add',
          value: {
            'name.givenName': 'Quinn',
            'name.familyName': 'Quirk',
            displayName: 'Quinn Quirk',
            'emails[type eq "work"].value': 'quinn@contoso.example',
          },
        },
        { op: 'Add', path: 'title', value: 'Dispatcher' },
        { op: 'Add', path: `${ENTERPRISE}:manager`, value: 'AliceAdm01' },
        { op: 'Replace', value: { [`${ENTERPRISE}:department`]: 'Fleet', [`${ENTERPRISE}:employeeNumber`]: '1001' } },
      ],
    }).expect(200);
    assert.equal(res.body.active, false);
    assert.deepEqual(res.body.name, { familyName: 'Quirk', givenName: 'Quinn' });
    assert.equal(res.body.displayName, 'Quinn Quirk');
    assert.deepEqual(res.body.emails, [{ value: 'quinn@contoso.example', type: 'work', primary: false }]);
    assert.equal(res.body.title, 'Dispatcher');
    assert.deepEqual(res.body[ENTERPRISE], {
      manager: { value: 'AliceAdm01' },
      department: 'Fleet',
      employeeNumber: '1001',
    });
    const back = await send('patch', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Replace', path: 'active', value: 'True' },
        { op: 'Remove', path: `${ENTERPRISE}:manager` },
      ],
    }).expect(200);
    assert.equal(back.body.active, true);
    assert.deepEqual(back.body[ENTERPRISE], { department: 'Fleet', employeeNumber: '1001' });
  });

  test('groups: create is declined, read without members, find by displayName, rename, add and remove members', async () => {
    const post = await send('post', '/Groups', {
      schemas: [CORE_GROUP, 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group'],
      externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
      displayName: 'displayName',
      meta: { resourceType: 'Group' },
    }).expect(501);
    assert.equal(post.body.status, '501');

    const groupId = String(suite.h.groups.other);
    const one = await send('get', `/Groups/${groupId}?excludedAttributes=members`).expect(200);
    assert.equal(one.body.members, undefined);
    const found = await send(
      'get',
      `/Groups?excludedAttributes=members&filter=${q('displayName eq "Other Team"')}`,
    ).expect(200);
    assert.deepEqual(
      found.body.Resources.map((g: { id: string }) => g.id),
      [groupId],
    );

    await send('patch', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Replace', path: 'displayName', value: '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName' },
      ],
    }).expect(200);
    const member = (
      await send('post', '/Users', { schemas: [CORE_USER], userName: 'entra.member@contoso.example' }).expect(201)
    ).body.id as string;
    const added = await send('patch', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: member }] }],
    }).expect(200);
    assert.ok(added.body.members.some((m: { value: string }) => m.value === member));
    const removed = await send('patch', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Remove', path: 'members', value: [{ $ref: null, value: member }] }],
    }).expect(200);
    assert.ok(!removed.body.members.some((m: { value: string }) => m.value === member));
    assert.ok(
      removed.body.members.some((m: { value: string }) => m.value === 'BobDriver1'),
      'only the listed member was removed',
    );
    await send('patch', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'displayName', value: 'Other Team' }],
    }).expect(200);
    await send('delete', `/Groups/${groupId}`).expect(501);
  });
});

describe('Okta provisioning sequence', () => {
  test('users: look up, create with groups and password, read, replace with PUT, deactivate with a no-path PATCH', async () => {
    const lookup = await send(
      'get',
      `/Users?filter=${q('userName eq "test.user@okta.local"')}&startIndex=1&count=100`,
    ).expect(200);
    assert.equal(lookup.body.totalResults, 0);

    const created = await send('post', '/Users', {
      schemas: [CORE_USER],
      userName: 'test.user@okta.local',
      name: { givenName: 'Test', familyName: 'User' },
      emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
      displayName: 'Test User',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: '1mz050nq',
      active: true,
    }).expect(201);
    const id = created.body.id as string;
    assert.equal(created.body.locale, 'en-US');
    assert.equal(created.body.password, undefined);
    assert.equal(created.body.groups, undefined);

    const read = await send('get', `/Users/${id}`).expect(200);
    assert.equal(read.body.displayName, 'Test User');

    const replaced = await send('put', `/Users/${id}`, {
      schemas: [CORE_USER],
      id,
      userName: 'test.user@okta.local',
      name: { givenName: 'Another', middleName: '', familyName: 'User' },
      emails: [{ primary: true, value: 'test.user@okta.local', type: 'work', display: 'test.user@okta.local' }],
      displayName: 'Another User',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      active: true,
      meta: { resourceType: 'User' },
    }).expect(200);
    assert.equal(replaced.body.name.givenName, 'Another');
    assert.equal(replaced.body.displayName, 'Another User');
    assert.deepEqual(replaced.body.emails, [{ value: 'test.user@okta.local', type: 'work', primary: true }]);

    const deactivated = await send('patch', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { active: false } }],
    }).expect(200);
    assert.equal(deactivated.body.active, false);
    const reactivated = await send('patch', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { active: true } }],
    }).expect(200);
    assert.equal(reactivated.body.active, true);
  });

  test('groups: list for import, find by name, rename with id echoed, add and remove members, replace with PUT', async () => {
    const all = await send('get', '/Groups?startIndex=1&count=100').expect(200);
    assert.ok(all.body.totalResults >= 2);
    const groupId = String(suite.h.groups.demo);
    const byName = await send('get', `/Groups?filter=${q('displayName eq "Demo Team"')}&startIndex=1&count=100`).expect(
      200,
    );
    assert.deepEqual(
      byName.body.Resources.map((g: { id: string }) => g.id),
      [groupId],
    );
    await send('post', '/Groups', { schemas: [CORE_GROUP], displayName: 'Test SCIMv2', members: [] }).expect(501);

    await send('patch', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { id: groupId, displayName: 'Demo Team (Okta)' } }],
    }).expect(200);
    const user = (
      await send('post', '/Users', { schemas: [CORE_USER], userName: 'okta.member@okta.local' }).expect(201)
    ).body.id as string;
    const added = await send('patch', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'members', value: [{ value: user, display: 'okta.member@okta.local' }] }],
    }).expect(200);
    assert.ok(added.body.members.some((m: { value: string }) => m.value === user));
    const removed = await send('patch', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'remove', path: `members[value eq "${user}"]` }],
    }).expect(200);
    assert.ok(!removed.body.members.some((m: { value: string }) => m.value === user));

    const current = (await send('get', `/Groups/${groupId}`).expect(200)).body;
    const put = await send('put', `/Groups/${groupId}`, {
      schemas: [CORE_GROUP],
      id: groupId,
      displayName: 'Demo Team',
      members: current.members.map((m: { value: string; display: string }) => ({ value: m.value, display: m.display })),
    }).expect(200);
    assert.equal(put.body.displayName, 'Demo Team');
    assert.deepEqual(
      put.body.members.map((m: { value: string }) => m.value),
      current.members.map((m: { value: string }) => m.value),
    );
    await send('delete', `/Groups/${groupId}`).expect(501);

    // Alice is still the group's admin after all of Okta's changes.
    const alice = await suite.h.token('alice@example.com', 'groups_read');
    const v1 = await request(suite.app)
      .get(`/v1/groups/${groupId}`)
      .set('Authorization', `Bearer ${alice}`)
      .expect(200);
    assert.equal(v1.body.resources[0].members.find((m: { value: string }) => m.value === 'AliceAdm01').is_admin, true);
  });
});
