// Organizations through the service (its own filters; the database's row-level security, the second wall, is proved
// as the runtime role in roles.test.ts): a group of another organization is indistinguishable from none.
import { status } from '@grpc/grpc-js';
import { groupsV1, scimAuditV1 } from '@mileage/proto';
import { asOrganization, rejection, serviceSuite } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { openDatabase } from './database';
import { startGroupsService } from './service.fixture';

const suite = serviceSuite({
  prefix: 'groups_orgs',
  open: (url) => openDatabase({ url }),
  start: (db) => startGroupsService(db.knex),
});

/** The suite's client acting inside organization 1 (acme) and 2 (globex). */
const clients = () => ({ acme: asOrganization(suite.client, 1), globex: asOrganization(suite.client, 2) });

const member = (userId: string, isAdmin = false, isDriver = true): groupsV1.Member => ({ userId, isAdmin, isDriver });
const update = (id: number, more: Partial<groupsV1.UpdateGroupRequest> = {}): groupsV1.UpdateGroupRequest => ({
  id,
  displayName: '',
  replaceMembers: false,
  members: [],
  expectedVersion: 0,
  replaceExternalId: false,
  ...more,
});
const audit = (requestId: string): scimAuditV1.ProvisioningAudit => ({
  actor: 'okta',
  operation: scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH,
  requestId,
});

describe('GroupsService across organizations', () => {
  test('a call without an organization is refused', async () => {
    const refused = await rejection(suite.client.getGroup({ id: 1 }));
    assert.equal(refused.code, status.FAILED_PRECONDITION);
    assert.equal(refused.reason, 'ORGANIZATION_REQUIRED');
  });

  test('a group of another organization is invisible to every call, as an unknown id is', async () => {
    const { acme, globex } = clients();
    const theirs = (await globex.createGroup({ displayName: 'Globex Fleet', members: [member('ErinAdmin1', true)] }))
      .group!;
    assert.equal(theirs.organizationId, 2);
    const ours = (await acme.createGroup({ displayName: 'Globex Fleet', members: [member('AliceAdm01', true)] }))
      .group!;
    assert.equal(ours.organizationId, 1);
    const unknown = 987_654;
    for (const id of [theirs.id, unknown]) {
      const calls: [string, () => Promise<unknown>][] = [
        ['getGroup', () => acme.getGroup({ id })],
        ['updateGroup', () => acme.updateGroup(update(id, { displayName: 'Taken over' }))],
        ['setMemberRoles', () => acme.setMemberRoles({ groupId: id, member: member('AliceAdm01', true) })],
        ['removeMembers', () => acme.removeMembers({ groupId: id, userIds: ['ErinAdmin1'] })],
      ];
      for (const [name, call] of calls) {
        const refused = await rejection(call());
        assert.deepEqual([refused.code, refused.reason], [status.NOT_FOUND, 'GROUP_NOT_FOUND'], `${name} ${id}`);
      }
      assert.deepEqual(await acme.checkGroupAdmin({ groupId: id, userId: 'ErinAdmin1' }), {
        exists: false,
        isAdmin: false,
      });
    }
    assert.deepEqual(
      (await acme.listAdministeredGroups({ userId: 'ErinAdmin1' })).groups,
      [],
      'their admin administers nothing here',
    );
    const listed = await acme.listGroups({ offset: 0, limit: 100, excludeMembers: false });
    assert.deepEqual(
      listed.groups.map((g) => g.id),
      [ours.id],
    );
    assert.equal(listed.totalSize, 1);
    const { group } = await globex.getGroup({ id: theirs.id });
    assert.deepEqual(group, theirs, 'untouched by the other organization');
  });

  test('a user who is a member in one organization cannot be made a member in another', async () => {
    const { acme, globex } = clients();
    const ours = (await acme.createGroup({ displayName: 'Ours', members: [member('OneOrgUsr1')] })).group!;
    const theirs = (await globex.createGroup({ displayName: 'Theirs', members: [] })).group!;
    for (const call of [
      () => globex.setMemberRoles({ groupId: theirs.id, member: member('OneOrgUsr1') }),
      () => globex.updateGroup(update(theirs.id, { replaceMembers: true, members: [member('OneOrgUsr1')] })),
      () => globex.createGroup({ displayName: 'Another', members: [member('OneOrgUsr1')] }),
    ]) {
      const refused = await rejection(call());
      assert.equal(refused.code, status.INVALID_ARGUMENT);
    }
    assert.deepEqual((await globex.getGroup({ id: theirs.id })).group, theirs, 'nothing changed');
    assert.equal((await globex.listGroups({ offset: 0, limit: 0, excludeMembers: true })).totalSize, 2);
    // Their own organization takes them anywhere.
    const second = (await acme.createGroup({ displayName: 'Ours too', members: [member('OneOrgUsr1', true)] })).group!;
    assert.deepEqual(
      (await acme.listAdministeredGroups({ userId: 'OneOrgUsr1' })).groups.map((g) => g.id),
      [second.id],
    );
    assert.equal(ours.organizationId, 1);
  });

  test('ListProvisioningEvents pages the organization’s trail newest first, without gaps or repeats', async () => {
    const { acme, globex } = clients();
    const ours = (await acme.createGroup({ displayName: 'Trail', members: [] })).group!;
    const theirs = (await globex.createGroup({ displayName: 'Their trail', members: [] })).group!;
    for (let i = 0; i < 4; i++) await acme.updateGroup(update(ours.id, { audit: audit(`ours-${i}`) }));
    await globex.updateGroup(update(theirs.id, { audit: audit('theirs') }));
    // Entries of one instant are ordered by id.
    await suite.db.knex.raw(
      `INSERT INTO provisioning_audit (occurred_at, actor, operation, team_id, request_id, organization_id)
       SELECT now() + interval '1 hour', 'entra', 'replace', ?, 'same-' || g, 1 FROM generate_series(1, 3) g`,
      [ours.id],
    );
    const seen: scimAuditV1.ProvisioningEvent[] = [];
    let page = await acme.listProvisioningEvents({ limit: 2, beforeId: 0 });
    for (;;) {
      seen.push(...page.events);
      if (!page.hasMore) break;
      assert.equal(page.events.length, 2);
      const last = page.events[page.events.length - 1]!;
      page = await acme.listProvisioningEvents({ limit: 2, beforeTime: last.time!, beforeId: last.id });
    }
    assert.deepEqual(
      seen.map((e) => e.requestId),
      ['same-3', 'same-2', 'same-1', 'ours-3', 'ours-2', 'ours-1', 'ours-0'],
    );
    assert.ok(seen.every((e) => e.resourceType === 'Group' && e.resourceId === String(ours.id)));
    assert.deepEqual([seen[3]!.actor, seen[3]!.action], ['okta', 'patch']);
    const all = await globex.listProvisioningEvents({ limit: 1000, beforeId: 0 });
    assert.deepEqual([all.events.map((e) => e.requestId), all.hasMore], [['theirs'], false]);
    for (const bad of [
      { limit: 0, beforeId: 0 },
      { limit: 1001, beforeId: 0 },
      { limit: 1, beforeId: 5 },
    ]) {
      assert.equal((await rejection(acme.listProvisioningEvents(bad))).code, status.INVALID_ARGUMENT);
    }
  });
});
