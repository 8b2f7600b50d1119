/**
 * Organization exports through the gateway (CONTRACT §8): requested by an organization admin (one at a time), followed,
 * and downloaded whole or by ranges (resuming), with 409 before completion, 416 past the end and 410 after expiry.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { GLOBEX, startHarness, type Harness } from './harness';

let h: Harness;
let app: Express;
before(async () => {
  h = await startHarness();
  app = h.app();
});
after(() => h.close());

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

test('an admin exports the organization, follows it, and downloads the archive whole and by ranges', async () => {
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
