/**
 * Organizations through the gateway (CONTRACT §7): the organization admin's /v1/organization routes, SCIM secret
 * tokens on /scim/v2, and SCIM inside the credential's organization only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { GLOBEX, startHarness, type Harness } from './harness';

let h: Harness;
/** SCIM_TOKEN_CACHE_SECONDS=0: every request asks the Users service, so a revocation is seen at once. */
let app: Express;

before(async () => {
  h = await startHarness();
  app = h.app({ scimTokenCacheSeconds: 0 });
});
after(() => h.close());

/** A person's token with scope organization_manage (the harness's provider grants only the read scopes). */
const personToken = (userId: string, scope = 'organization_manage') =>
  h.signWithRealKey({ user_id: userId, scope, sub: `sub-${userId}` });
/** A client-credentials token of the Globex provisioning client, naming its organization by the org_id claim. */
const globexClientToken = (claims: Record<string, unknown> = { org_id: GLOBEX.alias }) =>
  h.signWithRealKey({ azp: 'mileage-scim-globex', scope: 'scim', sub: 'service-account-globex', ...claims });

const v1 = (token: string) => ({
  get: (path: string) => request(app).get(path).set('Authorization', `Bearer ${token}`),
  post: (path: string, body: object) =>
    request(app).post(path).set('Authorization', `Bearer ${token}`).set('Content-Type', 'application/json').send(body),
  delete: (path: string) => request(app).delete(path).set('Authorization', `Bearer ${token}`),
});
const scim = (token: string, path: string) =>
  request(app).get(`/scim/v2${path}`).set('Authorization', `Bearer ${token}`);

async function mintToken(admin: string, name: string): Promise<{ id: string; token: string }> {
  const res = await v1(await personToken(admin)).post('/v1/organization/scim-tokens', { name });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; token: string };
}

describe('/v1/organization/scim-tokens', () => {
  test('an admin mints, lists and revokes; the secret is shown once and is a mscim_ token', async () => {
    const alice = v1(await personToken('AliceAdm01'));
    const created = await alice.post('/v1/organization/scim-tokens', {
      name: 'Entra ID',
      expires_at: '2099-01-01T00:00:00Z',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.match(created.body.token, /^mscim_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.body.name, 'Entra ID');
    assert.equal(created.body.expires_at, '2099-01-01T00:00:00.000Z');
    const listed = await alice.get('/v1/organization/scim-tokens').expect(200);
    const mine = listed.body.results.find((t: { id: string }) => t.id === created.body.id);
    assert.deepEqual(Object.keys(mine).sort(), ['created_at', 'expires_at', 'id', 'last_used_at', 'name']);
    assert.doesNotMatch(JSON.stringify(listed.body), /mscim_/, 'no secret in the list');
    await alice.delete(`/v1/organization/scim-tokens/${created.body.id}`).expect(204);
    await alice.delete(`/v1/organization/scim-tokens/${created.body.id}`).expect(404);
    const after = await alice.get('/v1/organization/scim-tokens').expect(200);
    assert.ok(!after.body.results.some((t: { id: string }) => t.id === created.body.id), 'revoked: not listed');
  });

  test('check order: scope (403 insufficient_scope) → validation (422) → organization admin (403)', async () => {
    const withoutScope = await v1(await personToken('AliceAdm01', 'users_read')).get('/v1/organization/scim-tokens');
    assert.equal(withoutScope.status, 403);
    assert.match(String(withoutScope.headers['www-authenticate']), /insufficient_scope.*organization_manage/);
    const bob = v1(await personToken('BobDriver1'));
    const invalid = await bob.post('/v1/organization/scim-tokens', { name: '' });
    assert.equal(invalid.status, 422);
    assert.deepEqual(invalid.body.detail[0].loc, ['body', 'name']);
    await bob.delete('/v1/organization/scim-tokens/not-a-uuid').expect(422);
    const notAdmin = await bob.get('/v1/organization/scim-tokens');
    assert.equal(notAdmin.status, 403);
    assert.equal(notAdmin.headers['www-authenticate'], undefined, 'a plain 403');
    await bob.post('/v1/organization/scim-tokens', { name: 'mine' }).expect(403);
    await bob.get('/v1/organization/provisioning-events').expect(403);
  });

  test("another organization's token is as unknown as a token that never existed", async () => {
    const { id } = await mintToken(GLOBEX.erin, 'Okta');
    const alice = v1(await personToken('AliceAdm01'));
    const foreign = await alice.delete(`/v1/organization/scim-tokens/${id}`);
    const unknown = await alice.delete('/v1/organization/scim-tokens/00000000-0000-4000-8000-000000000000');
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.body, unknown.body);
    const listed = await alice.get('/v1/organization/scim-tokens').expect(200);
    assert.ok(!listed.body.results.some((t: { id: string }) => t.id === id));
  });
});

describe('SCIM inside the credential’s organization', () => {
  test('a secret token works until revoked, then is the same 401 as a malformed or unknown one', async () => {
    const { id, token } = await mintToken(GLOBEX.erin, 'Entra rotation');
    await scim(token, '/Users').expect(200);
    await v1(await personToken(GLOBEX.erin))
      .delete(`/v1/organization/scim-tokens/${id}`)
      .expect(204);
    const revoked = await scim(token, '/Users');
    const malformed = await scim('mscim_nope', '/Users');
    const unknown = await scim(`mscim_${'A'.repeat(43)}`, '/Users');
    for (const res of [revoked, malformed, unknown]) {
      assert.equal(res.status, 401);
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="mileage", error="invalid_token"');
      assert.deepEqual(res.body, revoked.body);
    }
  });

  test('the same userName in two organizations: each credential finds only its own', async () => {
    const { token } = await mintToken(GLOBEX.erin, 'Globex IdP');
    const filter = `?filter=${encodeURIComponent('userName eq "bob@example.com"')}`;
    const globex = (await scim(token, `/Users${filter}`).expect(200)).body;
    assert.deepEqual(
      globex.Resources.map((u: { id: string }) => u.id),
      [GLOBEX.bob],
    );
    assert.equal(globex.totalResults, 1);
    const demo = (await scim(await h.scimToken(), `/Users${filter}`).expect(200)).body;
    assert.deepEqual(
      demo.Resources.map((u: { id: string }) => u.id),
      ['BobDriver1'],
    );
    const viaClaim = (await scim(await globexClientToken(), '/Users').expect(200)).body;
    assert.deepEqual(
      viaClaim.Resources.map((u: { id: string }) => u.id).sort(),
      [GLOBEX.erin, GLOBEX.frank, GLOBEX.bob].sort(),
    );
  });

  test("another organization's user and group are answered as ids that do not exist", async () => {
    const { token } = await mintToken(GLOBEX.erin, 'probe');
    const foreignUser = await scim(token, '/Users/BobDriver1');
    const unknownUser = await scim(token, '/Users/NoSuchUsr1');
    assert.equal(foreignUser.status, 404);
    assert.deepEqual(foreignUser.body, unknownUser.body);
    assert.doesNotMatch(JSON.stringify(foreignUser.body), /Bob|example\.com/);
    const foreignGroup = await scim(token, `/Groups/${h.groups.demo}`);
    assert.equal(foreignGroup.status, 404);
    const members = await request(app)
      .patch(`/scim/v2/Groups/${h.groups.globexFleet}`)
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/scim+json')
      .send({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'add', path: 'members', value: [{ value: 'BobDriver1' }] }],
      });
    assert.equal(members.status, 400);
    assert.equal(members.body.scimType, 'invalidValue');
  });

  test('a scim token naming no known organization, or of an unbound client without a claim: 401', async () => {
    for (const token of [
      await globexClientToken({ org_id: 'initech' }),
      await globexClientToken({ org_id: undefined }),
      await globexClientToken({ organization: ['demo', 'globex'] }),
    ]) {
      const res = await scim(token, '/Users');
      assert.equal(res.status, 401);
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="mileage", error="invalid_token"');
    }
  });
});

describe('/v1/organization/provisioning-events', () => {
  test("the organization's trail names the credential; another organization's trail does not show it", async () => {
    const { id, token } = await mintToken(GLOBEX.erin, 'trail');
    const patched = await request(app)
      .patch(`/scim/v2/Users/${GLOBEX.frank}`)
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/scim+json')
      .send({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', path: 'displayName', value: 'Frank D.' }],
      });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const erin = v1(await personToken(GLOBEX.erin));
    const trail = (await erin.get('/v1/organization/provisioning-events?limit=1000').expect(200)).body;
    const patch = trail.results.find(
      (e: { resource_id: string; action: string }) => e.resource_id === GLOBEX.frank && e.action === 'patch',
    );
    assert.equal(patch.credential, `scim_token:${id}`);
    assert.equal(patch.outcome, 'succeeded');
    assert.equal(patch.request_id, patched.headers['x-request-id']);
    assert.ok(
      trail.results.some((e: { resource_id: string }) => e.resource_id === id),
      "the token's creation is in the trail",
    );
    const alice = v1(await personToken('AliceAdm01'));
    const demoTrail = (await alice.get('/v1/organization/provisioning-events?limit=1000').expect(200)).body;
    assert.doesNotMatch(JSON.stringify(demoTrail), new RegExp(`${GLOBEX.frank}|${id}`));
  });

  test('pages newest first with next_cursor; a forged cursor is 422', async () => {
    const erin = v1(await personToken(GLOBEX.erin));
    const all = (await erin.get('/v1/organization/provisioning-events?limit=1000').expect(200)).body.results;
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { results: { id: string }[]; next_cursor: string | null } = (
        await erin
          .get(`/v1/organization/provisioning-events?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
          .expect(200)
      ).body;
      walked.push(...page.results.map((e) => e.id));
      cursor = page.next_cursor;
    } while (cursor);
    assert.deepEqual(
      walked,
      all.map((e: { id: string }) => e.id),
    );
    const times = all.map((e: { at: string }) => Date.parse(e.at));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => b - a),
    );
    await erin.get('/v1/organization/provisioning-events?cursor=forged').expect(422);
  });
});

describe('/v1 inside the caller’s organization', () => {
  test('a group of another organization is the same 403 as any group one does not administer', async () => {
    const erin = await h.signWithRealKey({ user_id: GLOBEX.erin, scope: 'groups_read', sub: 'sub-erin-groups' });
    const get = (path: string) => request(app).get(path).set('Authorization', `Bearer ${erin}`);
    const own = (await get('/v1/groups').expect(200)).body;
    assert.deepEqual(
      own.resources.map((g: { id: string }) => g.id),
      [String(h.groups.globexFleet)],
    );
    const foreign = await get(`/v1/groups/${h.groups.demo}`);
    const unknown = await get('/v1/groups/987654');
    assert.equal(foreign.status, 403);
    assert.deepEqual(foreign.body, unknown.body);
  });
});
