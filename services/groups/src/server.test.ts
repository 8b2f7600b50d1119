import { status } from '@grpc/grpc-js';
import { filterV1, groupsV1, scimAuditV1 } from '@mileage/proto';
import { asOrganization, rejection, serviceSuite } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { openDatabase } from './database';
import { startGroupsService } from './service.fixture';

const suite = serviceSuite({
  prefix: 'groups',
  open: (url) => openDatabase({ url }),
  // Every call acts inside organization 1 unless it says otherwise.
  start: async (db) => {
    const service = await startGroupsService(db.knex);
    return { ...service, client: asOrganization(service.client, 1) };
  },
});

const member = (userId: string, isAdmin = false, isDriver = true): groupsV1.Member => ({ userId, isAdmin, isDriver });

/** A rename sent with a version the group no longer has is refused with ABORTED. */
async function assertStaleRenameRefused(
  id: number,
  expectedVersion: number,
  more: Partial<groupsV1.UpdateGroupRequest>,
) {
  const stale = await rejection(
    suite.client.updateGroup({
      id,
      displayName: 'Lost',
      replaceMembers: false,
      members: [],
      expectedVersion,
      replaceExternalId: false,
      ...more,
    }),
  );
  assert.equal(stale.code, status.ABORTED);
}

describe('GroupsService over real gRPC and PostgreSQL', () => {
  test('creates a group with members and reads it back, members ordered by id', async () => {
    const { group } = await suite.client.createGroup({
      displayName: 'Demo Team',
      members: [member('BobDriver1'), member('AliceAdm01', true, false)],
    });
    assert.ok(group!.id > 0);
    assert.equal(group!.version, 1);
    assert.equal(group!.organizationId, 1);
    assert.deepEqual(group!.members, [member('AliceAdm01', true, false), member('BobDriver1')]);
    const { group: read } = await suite.client.getGroup({ id: group!.id });
    assert.deepEqual(read, group);
  });

  test('lists the groups a user administers and answers admin checks', async () => {
    const a = (await suite.client.createGroup({ displayName: 'A', members: [member('AdminOnly1', true, false)] }))
      .group!;
    const b = (
      await suite.client.createGroup({
        displayName: 'B',
        members: [member('AdminOnly1', true, true), member('DriverX001')],
      })
    ).group!;
    await suite.client.createGroup({ displayName: 'C', members: [member('AdminOnly1', false, true)] });
    const { groups } = await suite.client.listAdministeredGroups({ userId: 'AdminOnly1' });
    assert.deepEqual(
      groups.map((g) => g.id),
      [a.id, b.id],
    );
    assert.deepEqual(await suite.client.checkGroupAdmin({ groupId: b.id, userId: 'AdminOnly1' }), {
      exists: true,
      isAdmin: true,
    });
    assert.deepEqual(await suite.client.checkGroupAdmin({ groupId: b.id, userId: 'DriverX001' }), {
      exists: true,
      isAdmin: false,
    });
    assert.deepEqual(await suite.client.checkGroupAdmin({ groupId: 999_999, userId: 'AdminOnly1' }), {
      exists: false,
      isAdmin: false,
    });
  });

  test('replacing members keeps the roles of those who stay and gives new ones the roles sent', async () => {
    const g = (
      await suite.client.createGroup({
        displayName: 'Replace',
        members: [member('StaysAdmin', true, false), member('Leaves0001')],
      })
    ).group!;
    const { group } = await suite.client.updateGroup({
      id: g.id,
      displayName: 'Renamed',
      replaceMembers: true,
      members: [member('StaysAdmin', false, true), member('Newcomer01')],
      expectedVersion: g.version,
      replaceExternalId: false,
    });
    assert.equal(group!.displayName, 'Renamed');
    assert.equal(group!.version, 2);
    assert.deepEqual(group!.members, [member('Newcomer01'), member('StaysAdmin', true, false)]);
    await assertStaleRenameRefused(g.id, 1, {});
    const emptied = await suite.client.updateGroup({
      id: g.id,
      displayName: '',
      replaceMembers: true,
      members: [],
      expectedVersion: 0,
      replaceExternalId: false,
    });
    assert.deepEqual(emptied.group!.members, []);
    assert.equal(emptied.group!.displayName, 'Renamed');
  });

  test('sets roles of one member and removes members', async () => {
    const g = (await suite.client.createGroup({ displayName: 'Roles', members: [member('Driver0001')] })).group!;
    const promoted = (await suite.client.setMemberRoles({ groupId: g.id, member: member('Driver0001', true, true) }))
      .group!;
    assert.deepEqual(promoted.members, [member('Driver0001', true, true)]);
    const added = (await suite.client.setMemberRoles({ groupId: g.id, member: member('Driver0002') })).group!;
    assert.equal(added.members.length, 2);
    const removed = (await suite.client.removeMembers({ groupId: g.id, userIds: ['Driver0001', 'NotMember1'] })).group!;
    assert.deepEqual(removed.members, [member('Driver0002')]);
    assert.equal(removed.version, 4);
  });

  test('invalid input is refused and nothing changes', async () => {
    const g = (await suite.client.createGroup({ displayName: 'Stable', members: [member('Keeper0001')] })).group!;
    const bad = await rejection(
      suite.client.updateGroup({
        id: g.id,
        displayName: '',
        replaceMembers: true,
        members: [member('bad id'), member('Keeper0001'), member('Keeper0001')],
        expectedVersion: 0,
        replaceExternalId: false,
      }),
    );
    assert.equal(bad.code, status.INVALID_ARGUMENT);
    assert.deepEqual(
      bad.fieldViolations.map((v) => v.field),
      ['members[0].user_id', 'members[2].user_id'],
    );
    assert.deepEqual((await suite.client.getGroup({ id: g.id })).group, g);
    assert.equal(
      (await rejection(suite.client.createGroup({ displayName: ' ', members: [] }))).code,
      status.INVALID_ARGUMENT,
    );
    assert.equal((await rejection(suite.client.getGroup({ id: 0 }))).code, status.INVALID_ARGUMENT);
    assert.equal((await rejection(suite.client.getGroup({ id: 424242 }))).code, status.NOT_FOUND);
    assert.equal(
      (await rejection(suite.client.removeMembers({ groupId: 424242, userIds: [] }))).code,
      status.NOT_FOUND,
    );
  });

  test('concurrent membership changes are serialised: every change lands and versions count them', async () => {
    const g = (await suite.client.createGroup({ displayName: 'Busy', members: [] })).group!;
    const ids = Array.from({ length: 20 }, (_, i) => `Concur${String(i).padStart(4, '0')}`);
    await Promise.all(ids.map((id) => suite.client.setMemberRoles({ groupId: g.id, member: member(id) })));
    const { group } = await suite.client.getGroup({ id: g.id });
    assert.equal(group!.members.length, 20);
    assert.equal(group!.version, 21);
  });

  test('ListGroups filters by displayName case-insensitively and by member, pages by id, and can leave members out', async () => {
    const tag = Math.random().toString(36).slice(2, 8);
    const a = (await suite.client.createGroup({ displayName: `Fleet ${tag} North`, members: [member('ListMember')] }))
      .group!;
    const b = (await suite.client.createGroup({ displayName: `Fleet ${tag} South`, members: [] })).group!;
    const cmp = (attribute: string, operator: filterV1.Operator, value: string): filterV1.Filter => ({
      expr: { $case: 'comparison', value: { attribute, operator, value: { $case: 'stringValue', value } } },
    });
    const byName = await suite.client.listGroups({
      filter: cmp('DISPLAYNAME', filterV1.Operator.OPERATOR_EQ, `fleet ${tag} NORTH`),
      offset: 0,
      limit: 10,
      excludeMembers: false,
    });
    assert.deepEqual(
      byName.groups.map((g) => g.id),
      [a.id],
    );
    assert.deepEqual(byName.groups[0]!.members, [member('ListMember')]);
    const byMember = await suite.client.listGroups({
      filter: cmp('members.value', filterV1.Operator.OPERATOR_EQ, 'ListMember'),
      offset: 0,
      limit: 10,
      excludeMembers: true,
    });
    assert.deepEqual(
      byMember.groups.map((g) => [g.id, g.members.length]),
      [[a.id, 0]],
    );
    const both = await suite.client.listGroups({
      filter: cmp('displayName', filterV1.Operator.OPERATOR_SW, `Fleet ${tag}`),
      offset: 1,
      limit: 1,
      excludeMembers: false,
    });
    assert.equal(both.totalSize, 2);
    assert.deepEqual(
      both.groups.map((g) => g.id),
      [b.id],
    );
    const bad = await rejection(
      suite.client.listGroups({
        filter: cmp('owner', filterV1.Operator.OPERATOR_EQ, 'x'),
        offset: 0,
        limit: 10,
        excludeMembers: false,
      }),
    );
    assert.equal(bad.code, status.INVALID_ARGUMENT);
  });

  test('externalId and the audit entry are written with the change, in one transaction', async () => {
    const g = (await suite.client.createGroup({ displayName: 'Audited', members: [] })).group!;
    const audit = {
      actor: 'entra',
      operation: scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH,
      requestId: 'req-9',
      before: { displayName: 'Audited' },
      after: { displayName: 'Audited', externalId: 'ext-1' },
    };
    const { group } = await suite.client.updateGroup({
      id: g.id,
      displayName: '',
      replaceMembers: false,
      members: [],
      expectedVersion: g.version,
      externalId: 'ext-1',
      replaceExternalId: true,
      audit,
    });
    assert.equal(group!.externalId, 'ext-1');
    assert.equal((await suite.client.getGroup({ id: g.id })).group!.externalId, 'ext-1');
    const kept = await suite.client.updateGroup({
      id: g.id,
      displayName: 'Audited 2',
      replaceMembers: false,
      members: [],
      expectedVersion: 0,
      replaceExternalId: false,
    });
    assert.equal(kept.group!.externalId, 'ext-1', 'without replace_external_id it stays');
    await assertStaleRenameRefused(g.id, group!.version, { replaceExternalId: true, audit });
    const cleared = await suite.client.updateGroup({
      id: g.id,
      displayName: '',
      replaceMembers: false,
      members: [],
      expectedVersion: 0,
      replaceExternalId: true,
    });
    assert.equal(cleared.group!.externalId, undefined);
    const rows = (await suite.db.knex('provisioning_audit').where({ team_id: g.id }).orderBy('id')) as {
      operation: string;
      version: string;
      actor: string;
      after: unknown;
    }[];
    assert.deepEqual(
      rows.map((r) => [r.operation, Number(r.version), r.actor]),
      [['patch', 2, 'entra']],
      'one entry: the stale write and the unaudited writes recorded none',
    );
    assert.deepEqual(rows[0]!.after, audit.after);
    const bad = await rejection(
      suite.client.updateGroup({
        id: g.id,
        displayName: '',
        replaceMembers: false,
        members: [],
        expectedVersion: 0,
        replaceExternalId: false,
        audit: { actor: 'entra', operation: 0, requestId: '' },
      }),
    );
    assert.equal(bad.code, status.INVALID_ARGUMENT);
  });
  test('PatchGroup applies a difference: leavers out, joiners in with their roles, members who stay keep theirs', async () => {
    const g = (
      await suite.client.createGroup({
        displayName: 'By difference',
        members: [member('StayAdmin1', true, false), member('Leaver0001'), member('Stayer0001')],
      })
    ).group!;
    const audit = {
      actor: 'entra',
      operation: scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH,
      requestId: 'req-diff',
      before: { displayName: 'By difference' },
      after: { displayName: 'Renamed' },
    };
    const { group } = await suite.client.patchGroup({
      id: g.id,
      displayName: 'Renamed',
      replaceExternalId: false,
      // A member named to leave who is not one, and a joiner who already is (as admin: the role stays), change nothing.
      removeMemberIds: ['Leaver0001', 'NotMember1'],
      addMembers: [member('Joiner0001'), member('StayAdmin1')],
      expectedVersion: g.version,
      audit,
    });
    assert.equal(group!.displayName, 'Renamed');
    assert.equal(group!.version, g.version + 1);
    assert.deepEqual(group!.members, [member('Joiner0001'), member('StayAdmin1', true, false), member('Stayer0001')]);
    const rows = (await suite.db.knex('provisioning_audit').where({ team_id: g.id })) as {
      version: string;
      before: unknown;
      after: unknown;
      members_added: string[] | null;
      members_removed: string[] | null;
    }[];
    assert.equal(rows.length, 1);
    assert.equal(Number(rows[0]!.version), group!.version);
    assert.deepEqual([rows[0]!.before, rows[0]!.after], [audit.before, audit.after]);
    assert.deepEqual(
      [rows[0]!.members_added, rows[0]!.members_removed],
      [['Joiner0001'], ['Leaver0001']],
      'the members the statements changed, not the ones named',
    );
    const stale = await rejection(
      suite.client.patchGroup({
        id: g.id,
        displayName: '',
        replaceExternalId: false,
        removeMemberIds: ['Stayer0001'],
        addMembers: [],
        expectedVersion: g.version,
      }),
    );
    assert.equal(stale.code, status.ABORTED);
  });

  test('PatchGroup refuses bad differences and a group past its member limit, and writes nothing', async () => {
    const ids = Array.from({ length: 9_999 }, (_, i) => `L${String(i).padStart(9, '0')}`);
    const g = (await suite.client.createGroup({ displayName: 'Nearly full', members: ids.map((id) => member(id)) }))
      .group!;
    const patch = (more: Partial<groupsV1.PatchGroupRequest>) =>
      rejection(
        suite.client.patchGroup({
          id: g.id,
          displayName: '',
          replaceExternalId: false,
          removeMemberIds: [],
          addMembers: [],
          expectedVersion: 0,
          audit: {
            actor: 'entra',
            operation: scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH,
            requestId: 'req-refused',
          },
          ...more,
        }),
      );
    const pastLimit = await patch({ addMembers: [member('Joiner0002'), member('Joiner0003')] });
    assert.match(pastLimit.message, /too many members/);
    for (const refused of [
      pastLimit,
      await patch({ removeMemberIds: ['not an id'] }),
      await patch({ removeMemberIds: ['Leaver0001', 'Leaver0001'] }),
      await patch({ addMembers: [member('Joiner0002'), member('Joiner0002')] }),
    ])
      assert.equal(refused.code, status.INVALID_ARGUMENT, refused.message);
    const { group } = await suite.client.getGroup({ id: g.id });
    assert.equal(group!.version, g.version);
    assert.equal(group!.members.length, 9_999);
    assert.equal((await suite.db.knex('provisioning_audit').where({ team_id: g.id })).length, 0);
    // One leaver makes room for two joiners: the limit is the result's, not the request's.
    const { group: full } = await suite.client.patchGroup({
      id: g.id,
      displayName: '',
      replaceExternalId: false,
      removeMemberIds: [ids[0]!],
      addMembers: [member('Joiner0002'), member('Joiner0003')],
      expectedVersion: g.version,
    });
    assert.equal(full!.members.length, 10_000);
  });
});
