/**
 * Organization exports through the gateway (CONTRACT §8): requested by an organization admin (one at a time), followed,
 * and downloaded whole or by ranges (resuming), with 409 before completion, 416 past the end and 410 after expiry; the
 * archive's provisioning trail holds the group writes as well as the Users service's entries.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { drivesV1 } from '@mileage/proto';
import { GLOBEX, startHarness, type Harness } from './harness';

let h: Harness;
let app: Express;
before(async () => {
  h = await startHarness();
  app = h.app();
});
after(() => h.close());

function extract(archive: Buffer): Record<string, string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'gateway-export-'));
  try {
    writeFileSync(path.join(dir, 'a.tar.gz'), archive);
    const names = execFileSync('tar', ['-tzf', 'a.tar.gz'], { cwd: dir }).toString().trim().split('\n');
    execFileSync('tar', ['-xzf', 'a.tar.gz'], { cwd: dir });
    return Object.fromEntries(names.map((name) => [name, readFileSync(path.join(dir, name), 'utf8')]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const personToken = (userId: string, scope = 'organization_manage') =>
  h.signWithRealKey({ user_id: userId, scope, sub: `sub-${userId}` });
const as = async (userId: string) => {
  const token = await personToken(userId);
  return {
    get: (path: string, range?: string) => {
      const req = request(app).get(path).set('Authorization', `Bearer ${token}`);
      return range ? req.set('Range', range) : req;
    },
    post: (path: string) => request(app).post(path).set('Authorization', `Bearer ${token}`),
  };
};
/** supertest's body of a binary answer, whole. */
const binary = (req: request.Test) =>
  req.buffer(true).parse((res, done) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => done(null, Buffer.concat(chunks)));
  });

/** Frank's drives, reported to Globex Fleet: the Drives service's part of Globex's export. */
async function reportFranksDrives(count: number): Promise<number[]> {
  const call = { organizationId: h.globexId };
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = Date.UTC(2026, 10, 2, 8 + i);
    const { drive } = await h.drivesClient.createDrive(
      {
        drive: {
          id: 0,
          userId: GLOBEX.frank,
          organizationId: h.globexId,
          startTime: { seconds: start / 1000, nanos: 0 },
          endTime: { seconds: start / 1000 + 1_800, nanos: 0 },
          classification: drivesV1.Classification.CLASSIFICATION_BUSINESS,
          distance: { amount: 12.5, units: 'mi' },
          value: { amount: 838, currency: 'USD' },
          entry: drivesV1.Entry.ENTRY_MANUAL,
          description: `visit, "site" ${i}`,
        },
      },
      call,
    );
    await h.drivesClient.reportDrive({ driveId: drive!.id, groupId: h.groups.globexFleet }, call);
    ids.push(drive!.id);
  }
  return ids;
}

test('an admin exports the organization, follows it, and downloads the archive whole and by ranges', async () => {
  const franks = await reportFranksDrives(3);
  const erin = await as(GLOBEX.erin);
  const accepted = await erin.post('/v1/organization/exports').expect(202);
  const { id } = accepted.body as { id: string };
  assert.equal(accepted.headers.location, `/v1/organization/exports/${id}`);
  assert.equal(accepted.body.status, 'queued');
  const running = await erin.post('/v1/organization/exports').expect(409);
  assert.equal(running.body.type, '/errors/export-running');

  // Not an admin: 403. Another organization's admin: 404.
  await (await as(GLOBEX.frank)).post('/v1/organization/exports').expect(403);
  await (await as('AliceAdm01')).get(`/v1/organization/exports/${id}`).expect(404);
  await erin.get(`/v1/organization/exports/${id}/archive`).expect(409);

  await h.runExportJob();
  const done = await erin.get(`/v1/organization/exports/${id}`).expect(200);
  assert.equal(done.body.status, 'completed', JSON.stringify(done.body));
  assert.equal(done.body.progress.phase, 'done');
  assert.ok(done.body.progress.rows >= 3, 'Globex has three users');

  const whole = await binary(erin.get(`/v1/organization/exports/${id}/archive`)).expect(200);
  const archive = whole.body as Buffer;
  assert.equal(whole.headers['content-type'], 'application/gzip');
  assert.equal(whole.headers.etag, `"${done.body.sha256}"`);
  assert.equal(whole.headers['accept-ranges'], 'bytes');
  assert.equal(archive.length, done.body.size_bytes);
  assert.equal(createHash('sha256').update(archive).digest('hex'), done.body.sha256);

  // The archive: a manifest describing every file, the Users service's parts and the Drives service's.
  const files = extract(archive);
  const manifest = JSON.parse(files['manifest.json']!) as {
    format: string;
    organization: { id: string };
    files: { name: string; rows: number; sha256: string }[];
  };
  assert.equal(manifest.format, 'mileage-export/1');
  assert.equal(manifest.organization.id, String(h.globexId));
  assert.deepEqual(Object.keys(files), ['manifest.json', ...manifest.files.map((f) => f.name)]);
  assert.deepEqual(
    manifest.files.map((f) => f.name),
    [
      'users.jsonl',
      'scim_tokens.jsonl',
      'groups.jsonl',
      'reported_drives.jsonl',
      'reported_drives.csv',
      'webhooks.jsonl',
      'provisioning_events.jsonl',
    ],
  );
  for (const f of manifest.files)
    assert.equal(createHash('sha256').update(files[f.name]!).digest('hex'), f.sha256, f.name);
  const reported = files['reported_drives.jsonl']!.trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(
    reported.map((d) => Number(d.id)),
    franks,
  );
  assert.ok(reported.every((d) => (d.driver as { id: string }).id === GLOBEX.frank));
  assert.equal(manifest.files.find((f) => f.name === 'reported_drives.csv')!.rows, reported.length);
  assert.equal(files['reported_drives.csv']!.trim().split('\n').length, reported.length + 1, 'a header and a row each');
  assert.ok(!files['webhooks.jsonl']!.includes('secret'), 'no signing secret');
  const groups = files['groups.jsonl']!.trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const fleet = groups.find((g) => g.id === String(h.groups.globexFleet))!;
  assert.equal(fleet.displayName, 'Globex Fleet');
  assert.deepEqual(fleet.admins, [GLOBEX.erin]);
  assert.deepEqual(
    (fleet.members as { value: string }[]).map((m) => m.value).sort(),
    [GLOBEX.erin, GLOBEX.frank].sort(),
  );
  const users = files['users.jsonl']!.trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { id: string });
  assert.deepEqual(users.map((u) => u.id).sort(), [GLOBEX.erin, GLOBEX.frank, GLOBEX.bob].sort());

  const part = await binary(erin.get(`/v1/organization/exports/${id}/archive`, 'bytes=10-19')).expect(206);
  assert.equal(part.headers['content-range'], `bytes 10-19/${archive.length}`);
  assert.deepEqual(part.body, archive.subarray(10, 20));
  // A broken download resumes where it stopped.
  const rest = await binary(erin.get(`/v1/organization/exports/${id}/archive`, 'bytes=100-')).expect(206);
  assert.deepEqual(Buffer.concat([archive.subarray(0, 100), rest.body as Buffer]), archive);
  const other = await binary(
    erin.get(`/v1/organization/exports/${id}/archive`, 'bytes=100-').set('If-Range', '"another archive"'),
  ).expect(200);
  assert.deepEqual(other.body, archive, 'If-Range naming another archive: the whole archive');
  const past = await erin.get(`/v1/organization/exports/${id}/archive`, `bytes=${archive.length}-`).expect(416);
  assert.equal(past.headers['content-range'], `bytes */${archive.length}`);

  const listed = await erin.get('/v1/organization/exports').expect(200);
  assert.deepEqual(
    listed.body.results.map((e: { id: string }) => e.id),
    [id],
  );
  const trail = await erin.get('/v1/organization/provisioning-events').expect(200);
  const actions = trail.body.results
    .filter((e: { resource_type: string }) => e.resource_type === 'Export')
    .map((e: { action: string }) => e.action);
  // Four downloads (the 416 sent nothing) and the request, newest first.
  assert.deepEqual(actions, ['download', 'download', 'download', 'download', 'export']);

  // Past its expiry the archive is gone: 410, and the export says so.
  await h.usersDb.knex.raw(`UPDATE organization_exports SET expires_at = now() - interval '1 second' WHERE id = ?`, [
    id,
  ]);
  await erin.get(`/v1/organization/exports/${id}/archive`).expect(410);
  assert.equal((await erin.get(`/v1/organization/exports/${id}`).expect(200)).body.status, 'expired');
});

test('the archive’s trail holds the group writes with their member changes, oldest first, as the API lists it', async () => {
  const erin = await as(GLOBEX.erin);
  const minted = await erin.post('/v1/organization/scim-tokens').send({ name: 'Okta' }).expect(201);
  const { id: tokenId, token } = minted.body as { id: string; token: string };
  const patchFleet = (operation: object) =>
    request(app)
      .patch(`/scim/v2/Groups/${h.groups.globexFleet}`)
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/scim+json')
      .send({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [operation] })
      .expect(200);
  await patchFleet({ op: 'add', path: 'members', value: [{ value: GLOBEX.bob }] });
  await patchFleet({ op: 'remove', path: `members[value eq "${GLOBEX.bob}"]` });

  const { id } = (await erin.post('/v1/organization/exports').expect(202)).body as { id: string };
  await h.runExportJob();
  assert.equal((await erin.get(`/v1/organization/exports/${id}`).expect(200)).body.status, 'completed');
  // The trail as the API lists it now, newest first (before the download adds to it).
  const listed: { id: string }[] = [];
  for (let cursor = ''; ;) {
    const page = await erin.get(`/v1/organization/provisioning-events?limit=2${cursor}`).expect(200);
    listed.push(...(page.body.results as { id: string }[]));
    if (!page.body.has_more) break;
    cursor = `&cursor=${encodeURIComponent(page.body.next_cursor as string)}`;
  }
  const files = extract((await binary(erin.get(`/v1/organization/exports/${id}/archive`)).expect(200)).body as Buffer);
  const text = files['provisioning_events.jsonl']!;
  const trail = text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const manifest = JSON.parse(files['manifest.json']!) as { files: { name: string; rows: number; sha256: string }[] };
  const described = manifest.files.find((f) => f.name === 'provisioning_events.jsonl')!;
  assert.deepEqual([described.rows, described.sha256], [trail.length, createHash('sha256').update(text).digest('hex')]);

  assert.deepEqual(
    trail.map((e) => e.id),
    listed.map((e) => e.id).reverse(),
    'every entry of both owners, oldest first: the API’s list reversed',
  );
  const fleetWrites = trail.filter((e) => e.resource_type === 'Group');
  assert.deepEqual(
    fleetWrites.map((e) => [e.resource_id, e.action, e.credential, e.members_added, e.members_removed]),
    [
      [String(h.groups.globexFleet), 'patch', `scim_token:${tokenId}`, [GLOBEX.bob], []],
      [String(h.groups.globexFleet), 'patch', `scim_token:${tokenId}`, [], [GLOBEX.bob]],
    ],
  );
  assert.ok(
    trail.some((e) => e.resource_type === 'ScimToken' && e.resource_id === tokenId && e.action === 'create'),
    'the Users service’s entries are there too',
  );
  assert.ok(!text.includes(token) && !text.includes('mscim_'), 'no SCIM token secret');
  assert.ok(!/secret|nonce|password/i.test(text), 'no secret, attestation nonce or password');
});
