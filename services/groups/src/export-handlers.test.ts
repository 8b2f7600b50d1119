// The Groups service's part of an organization export (WriteExportPart) over real gRPC, PostgreSQL and a real archive
// directory: the groups, and the group writes of the provisioning trail, oldest first to the microsecond, with the
// members each change added and removed, from the calling organization only.
import { groupsV1, scimAuditV1 } from '@mileage/proto';
import { exportPartKey, LocalArchiveStore } from '@mileage/runtime/storage';
import { asOrganization, rejection, serviceSuite } from '@mileage/runtime/testing';
import { status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { openDatabase } from './database';
import { MEMBER_PAGE_ROWS } from './export-handlers';
import { startGroupsService } from './service.fixture';

const root = mkdtempSync(path.join(tmpdir(), 'groups-export-'));
after(() => rmSync(root, { recursive: true, force: true }));
const archives = new LocalArchiveStore(root);
const suite = serviceSuite({
  prefix: 'groups_export',
  open: (url) => openDatabase({ url }),
  start: (db) => startGroupsService(db.knex, { archives, scimBaseUrl: 'https://mileage.example/scim/v2' }),
});
const clients = () => ({ acme: asOrganization(suite.client, 1), globex: asOrganization(suite.client, 2) });

const member = (userId: string, isAdmin = false): groupsV1.Member => ({ userId, isAdmin, isDriver: !isAdmin });
const audit = (requestId: string, before?: object, after?: object): scimAuditV1.ProvisioningAudit => ({
  actor: 'scim_token:7d0c6f3e-5b8a-4c1e-9f2d-0a1b2c3d4e5f',
  operation: scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH,
  requestId,
  attestationNonce: `nonce-${requestId}`,
  ...(before ? { before } : {}),
  ...(after ? { after } : {}),
});

const readPart = (exportId: string, name: string) =>
  readFileSync(path.join(root, exportPartKey(exportId, name)), 'utf8');
const jsonLines = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

test('the part: the groups, and the trail of group writes oldest first with their member changes', async () => {
  const { acme, globex } = clients();
  const fleet = (
    await acme.createGroup({ displayName: 'Fleet', members: [member('AdminOne01', true), member('Leaver0001')] })
  ).group!;
  const patched = await acme.patchGroup({
    id: fleet.id,
    displayName: 'Fleet North',
    replaceExternalId: false,
    removeMemberIds: ['Leaver0001'],
    addMembers: [member('Joiner0001')],
    expectedVersion: fleet.version,
    audit: audit('req-patch', { displayName: 'Fleet' }, { displayName: 'Fleet North' }),
  });
  await acme.updateGroup({
    id: fleet.id,
    displayName: 'Fleet North 2',
    replaceMembers: false,
    members: [],
    expectedVersion: 0,
    replaceExternalId: false,
    audit: { ...audit('req-rename'), operation: scimAuditV1.AuditOperation.AUDIT_OPERATION_REPLACE },
  });
  const theirs = (await globex.createGroup({ displayName: 'Theirs', members: [] })).group!;
  await globex.patchGroup({
    id: theirs.id,
    displayName: 'Theirs 2',
    replaceExternalId: false,
    removeMemberIds: [],
    addMembers: [member('GlobexUsr1')],
    expectedVersion: 0,
    audit: audit('req-theirs'),
  });
  // Entries taken over from earlier owners carry older times than their ids say, and two of one millisecond are
  // told apart by their microseconds: the trail's order is (time, id), not the id's.
  await suite.db.knex.raw(
    `INSERT INTO provisioning_audit (occurred_at, actor, operation, team_id, request_id, organization_id) VALUES
       ('2026-01-02T03:04:05.000900Z', 'okta', 'replace', ?, 'legacy-later', 1),
       ('2026-01-02T03:04:05.000100Z', 'okta', 'replace', ?, 'legacy-earlier', 1)`,
    [fleet.id, fleet.id],
  );

  const exportId = randomUUID();
  const { files } = await acme.writeExportPart({ exportId });
  assert.deepEqual(
    files.map((f) => f.name),
    ['groups.jsonl', 'provisioning_events.groups.jsonl'],
  );
  for (const file of files) {
    const bytes = readFileSync(path.join(root, exportPartKey(exportId, file.name)));
    assert.equal(file.sha256, createHash('sha256').update(bytes).digest('hex'), file.name);
    assert.equal(file.sizeBytes, bytes.length, file.name);
    assert.equal(file.rows, jsonLines(bytes.toString('utf8')).length, file.name);
  }

  const groups = jsonLines(readPart(exportId, 'groups.jsonl'));
  assert.deepEqual(
    groups.map((g) => g.displayName),
    ['Fleet North 2'],
  );
  const trailText = readPart(exportId, 'provisioning_events.groups.jsonl');
  const trail = jsonLines(trailText);
  assert.deepEqual(
    trail.map((e) => e.request_id),
    ['legacy-earlier', 'legacy-later', 'req-patch', 'req-rename'],
    'oldest first, another organization’s entries left out',
  );
  assert.deepEqual(
    trail.map((e) => e.at).slice(0, 2),
    ['2026-01-02T03:04:05.000100Z', '2026-01-02T03:04:05.000900Z'],
    'times to the microsecond, UTC',
  );
  assert.ok(trail.every((e) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(String(e.at))));
  const [, , patch, rename] = trail;
  assert.deepEqual(patch, {
    id: patch!.id,
    at: patch!.at,
    credential: 'scim_token:7d0c6f3e-5b8a-4c1e-9f2d-0a1b2c3d4e5f',
    action: 'patch',
    resource_type: 'Group',
    resource_id: String(fleet.id),
    outcome: 'succeeded',
    request_id: 'req-patch',
    before: { displayName: 'Fleet' },
    after: { displayName: 'Fleet North' },
    members_added: ['Joiner0001'],
    members_removed: ['Leaver0001'],
  });
  assert.match(String(patch!.id), /^groups-\d+$/);
  assert.equal(patched.group!.version, fleet.version + 1);
  assert.equal(rename!.action, 'replace');
  assert.equal('members_added' in rename!, false, 'a write that is no change by difference names no members');
  assert.ok(!trailText.includes('nonce'), 'the replay guard of the actor attestation is not the organization’s data');

  const other = randomUUID();
  const theirFiles = await globex.writeExportPart({ exportId: other });
  const theirTrail = jsonLines(readPart(other, 'provisioning_events.groups.jsonl'));
  assert.deepEqual(
    theirTrail.map((e) => [e.request_id, e.members_added]),
    [['req-theirs', ['GlobexUsr1']]],
  );
  assert.equal(theirFiles.files[1]!.rows, 1);
});

test('an export id that is no UUID is refused', async () => {
  const refused = await rejection(clients().acme.writeExportPart({ exportId: 'not-a-uuid' }));
  assert.equal(refused.code, status.INVALID_ARGUMENT);
});

test("a group's members come whole and in order across the statements' seams, each line JSON.stringify's", async () => {
  // Organization 3's groups, one of another organization's between them: none, more than two statements' worth,
  // three, then sizes that end a statement exactly at a group's end.
  const sizes = [0, 2 * MEMBER_PAGE_ROWS + 1, 3, MEMBER_PAGE_ROWS - 4, 1];
  const knex = suite.db.knex;
  const ids: string[] = [];
  const userId = (group: number, i: number) => `G${group}${String(i).padStart(8, '0')}`;
  const insertTeam = async (name: string, organizationId: number, externalId: string | null = null) => {
    const { rows } = await knex.raw<{ rows: { id: string }[] }>(
      `INSERT INTO teams (display_name, external_id, organization_id) VALUES (?, ?, ?) RETURNING id`,
      [name, externalId, organizationId],
    );
    return String(rows[0]!.id);
  };
  for (const [group, size] of sizes.entries()) {
    if (group === 2) {
      await knex.raw(`INSERT INTO member_organizations (user_id, organization_id)
        SELECT 'T' || lpad(g::text, 9, '0'), 4 FROM generate_series(1, 50) g`);
      await knex.raw(
        `INSERT INTO team_members (team_id, user_id, organization_id) SELECT ?, 'T' || lpad(g::text, 9, '0'), 4
           FROM generate_series(1, 50) g`,
        [await insertTeam('Theirs', 4)],
      );
    }
    const id = await insertTeam(`Group ${group}`, 3, group === 2 ? 'ext-2' : null);
    ids.push(id);
    await knex.raw(
      `INSERT INTO member_organizations (user_id, organization_id)
         SELECT ? || lpad(g::text, 8, '0'), 3 FROM generate_series(1, ?::int) g`,
      [`G${group}`, size],
    );
    // Inserted in reverse: the export orders them itself.
    await knex.raw(
      `INSERT INTO team_members (team_id, user_id, is_admin, organization_id)
         SELECT ?, ? || lpad(g::text, 8, '0'), g % 1000 = 1, 3 FROM generate_series(?::int, 1, -1) g`,
      [id, `G${group}`, size],
    );
  }

  const exportId = randomUUID();
  const { files } = await asOrganization(suite.client, 3).writeExportPart({ exportId });
  const text = readPart(exportId, 'groups.jsonl');
  const lines = text.split('\n').filter(Boolean);
  assert.equal(files[0]!.rows, sizes.length);
  for (const [group, size] of sizes.entries()) {
    const line = lines[group]!;
    const parsed = JSON.parse(line) as { id: string; externalId?: string; members: unknown[]; admins: string[] };
    assert.equal(line, JSON.stringify(parsed), `group ${group}: one JSON text, as JSON.stringify writes it`);
    assert.equal(parsed.id, ids[group]);
    assert.equal(parsed.externalId, group === 2 ? 'ext-2' : undefined);
    const users = Array.from({ length: size }, (_, i) => userId(group, i + 1));
    assert.deepEqual(
      parsed.members,
      users.map((u) => ({ value: u, $ref: `https://mileage.example/scim/v2/Users/${u}`, type: 'User' })),
      `group ${group}: every member once, in order`,
    );
    assert.deepEqual(
      parsed.admins,
      users.filter((_, i) => i % 1000 === 0),
    );
  }
});
