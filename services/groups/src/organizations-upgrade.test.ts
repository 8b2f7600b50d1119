// The upgrade into organizations with zero downtime, from the previous release's schema with data: its replicas keep
// writing (declaring no organization) after the expand migrations, everything lands in organization 1, and after the
// contract migrations the organizations are isolated, the members the old replicas added included.
import { status } from '@grpc/grpc-js';
import { grantRuntimeAccess } from '@mileage/runtime/database';
import { asOrganization, createSchemaRoles, createTestDatabase, rejection } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { openDatabase } from './database';
import { startGroupsService } from './service.fixture';

const ORGANIZATIONS_RELEASE = '20261126100000';

test('groups upgrade into organization 1 while the previous release serves', { timeout: 60_000 }, async (t) => {
  const roles = await createSchemaRoles(await createTestDatabase('groups_upgrade'), 'groups');
  const owner = openDatabase({ url: roles.urlOf(roles.owner) });
  const runtime = openDatabase({ url: roles.urlOf(roles.runtime) });
  // A replica of the previous release: the runtime role, declaring no organization.
  const oldReplica = new pg.Client({ connectionString: roles.urlOf(roles.runtime) });
  t.after(async () => {
    await oldReplica.end();
    await runtime.close();
    await owner.close();
    await roles.drop();
  });
  const [, pending] = (await owner.knex.migrate.list()) as [unknown[], { file: string }[]];
  for (const { file } of pending) if (file < ORGANIZATIONS_RELEASE) await owner.knex.migrate.up({ name: file });
  await grantRuntimeAccess(owner.knex, 'groups', roles.runtime.role, ['provisioning_audit']);
  await oldReplica.connect();
  await oldReplica.query('SET search_path = groups');
  const oldTeam = async (name: string, members: string[]) => {
    const { rows } = await oldReplica.query<{ id: string }>(
      `INSERT INTO teams (display_name) VALUES ($1) RETURNING id`,
      [name],
    );
    const id = Number(rows[0]!.id);
    for (const user of members)
      await oldReplica.query(`INSERT INTO team_members (team_id, user_id, is_admin) VALUES ($1, $2, true)`, [id, user]);
    return id;
  };
  const before = await oldTeam('Before', ['OldMember1', 'OldMember2']);
  await oldReplica.query(`INSERT INTO provisioning_audit (actor, operation, team_id) VALUES ('okta', 'patch', $1)`, [
    before,
  ]);

  await owner.migrate({ phase: 'expand', runtimeRole: roles.runtime.role });
  // During the rollout: the old replicas still write, a member no membership recorded before included.
  const during = await oldTeam('During', ['OldMember1', 'RollingNew']);

  await owner.migrate({ phase: 'contract', runtimeRole: roles.runtime.role });
  const service = await startGroupsService(runtime.knex);
  t.after(() => service.close());
  const demo = asOrganization(service.client, 1);
  const globex = asOrganization(service.client, 2);
  const { groups } = await demo.listGroups({ offset: 0, limit: 10, excludeMembers: false });
  assert.deepEqual(
    groups.map((g) => [g.id, g.organizationId, g.members.map((m) => m.userId)]),
    [
      [before, 1, ['OldMember1', 'OldMember2']],
      [during, 1, ['OldMember1', 'RollingNew']],
    ],
  );
  const { events } = await demo.listProvisioningEvents({ limit: 10, beforeId: 0 });
  assert.deepEqual(
    events.map((e) => [e.resourceId, e.actor]),
    [[String(before), 'okta']],
  );
  assert.equal((await globex.listGroups({ offset: 0, limit: 0, excludeMembers: true })).totalSize, 0);
  // The member the old replica added during the rollout was recorded in organization 1 by the contract phase.
  const theirs = (await globex.createGroup({ displayName: 'Globex', members: [] })).group!;
  const refused = await rejection(
    globex.setMemberRoles({ groupId: theirs.id, member: { userId: 'RollingNew', isAdmin: false, isDriver: true } }),
  );
  assert.equal(refused.code, status.INVALID_ARGUMENT);
  // After the contract phase a writer that declares no organization writes nothing.
  const late = await oldReplica.query(`INSERT INTO teams (display_name) VALUES ('Late')`).then(
    () => 'committed',
    (err: { code?: string }) => err.code,
  );
  assert.equal(late, '42501');
});
