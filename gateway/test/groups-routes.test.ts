import { freePort } from '@mileage/runtime/config';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { startHarness, type Harness } from './harness';

let h: Harness;
let alice: string;
let bob: string;

before(async () => {
  h = await startHarness();
  alice = await h.token('alice@example.com', 'groups_read');
  bob = await h.token('bob@example.com', 'groups_read');
});
after(() => h.close());

describe('GET /v1/groups and /v1/groups/{group_id}', () => {
  test('lists exactly the groups the caller administers, in the GroupListResponse shape', async () => {
    const res = await request(h.app()).get('/v1/groups').set('Authorization', `Bearer ${alice}`).expect(200);
    assert.equal(res.headers['x-ratelimit-limit'], '30');
    assert.equal(res.body.resources.length, 1);
    const [group] = res.body.resources;
    assert.equal(group.id, String(h.groups.demo));
    assert.equal(group.display_name, 'Demo Team');
    assert.deepEqual(group.members, [
      { value: 'AliceAdm01', display: 'alice@example.com', is_admin: true, is_driver: false },
      { value: 'BobDriver1', display: 'bob@example.com', is_admin: false, is_driver: true },
      { value: 'Inactive01', display: 'ivan@example.com', is_admin: false, is_driver: true },
    ]);
    assert.equal(group.meta.resourceType, 'Group');
    assert.match(group.meta.location, new RegExp(`/v1/groups/${h.groups.demo}$`));
    assert.ok(Date.parse(group.meta.created) <= Date.parse(group.meta.lastModified));

    const bobs = await request(h.app()).get('/v1/groups').set('Authorization', `Bearer ${bob}`).expect(200);
    assert.deepEqual(
      bobs.body.resources.map((g: { id: string }) => g.id),
      [String(h.groups.other)],
    );
  });

  test('one group for its admins; 403 for others and for an unknown id (no existence oracle); 422 for a malformed one', async () => {
    const app = h.app();
    const res = await request(app)
      .get(`/v1/groups/${h.groups.demo}`)
      .set('Authorization', `Bearer ${alice}`)
      .expect(200);
    assert.equal(res.body.resources.length, 1);
    assert.equal(res.body.resources[0].id, String(h.groups.demo));
    await request(app).get(`/v1/groups/${h.groups.other}`).set('Authorization', `Bearer ${alice}`).expect(403);
    await request(app).get(`/v1/groups/${h.groups.demo}`).set('Authorization', `Bearer ${bob}`).expect(403);
    const missing = await request(app).get('/v1/groups/987654').set('Authorization', `Bearer ${alice}`).expect(403);
    const other = await request(app).get(`/v1/groups/${h.groups.other}`).set('Authorization', `Bearer ${alice}`);
    assert.equal(other.status, 403);
    assert.deepEqual(
      missing.body,
      other.body,
      'an unknown group looks exactly like one the caller does not administer',
    );
    for (const bad of ['abc', '0', '-1', '1.5', '01', '99999999999999999999']) {
      const r = await request(app).get(`/v1/groups/${bad}`).set('Authorization', `Bearer ${alice}`).expect(422);
      assert.deepEqual(r.body.detail[0].loc, ['path', 'group_id']);
    }
  });

  test('the groups_read scope is required', async () => {
    const usersOnly = await h.token('alice@example.com', 'users_read');
    const res = await request(h.app()).get('/v1/groups').set('Authorization', `Bearer ${usersOnly}`).expect(403);
    assert.equal(
      res.headers['www-authenticate'],
      'Bearer realm="mileage", error="insufficient_scope", scope="groups_read"',
    );
    await request(h.app()).get(`/v1/groups/${h.groups.demo}`).set('Authorization', `Bearer ${usersOnly}`).expect(403);
  });

  test('an inactive caller is refused even for a group they belong to', async () => {
    const ivan = await h.token('ivan@example.com', 'groups_read');
    await request(h.app()).get('/v1/groups').set('Authorization', `Bearer ${ivan}`).expect(403);
  });

  test("a member's display is their displayName, else their formatted name, else their userName", async () => {
    const app = h.app();
    const scim = await h.scimToken();
    const provision = async (user: Record<string, unknown>) =>
      (
        await request(app)
          .post('/scim/v2/Users')
          .set('Authorization', `Bearer ${scim}`)
          .set('Content-Type', 'application/scim+json')
          .send(JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], ...user }))
          .expect(201)
      ).body.id as string;
    const named = await provision({ userName: 'named@example.com', displayName: 'Named Person' });
    const formatted = await provision({ userName: 'formatted@example.com', name: { formatted: 'Ms. F. Ormatted' } });
    await request(app)
      .patch(`/scim/v2/Groups/${h.groups.demo}`)
      .set('Authorization', `Bearer ${scim}`)
      .set('Content-Type', 'application/scim+json')
      .send(
        JSON.stringify({
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'add', path: 'members', value: [{ value: named }, { value: formatted }] }],
        }),
      )
      .expect(200);
    const res = await request(app)
      .get(`/v1/groups/${h.groups.demo}`)
      .set('Authorization', `Bearer ${alice}`)
      .expect(200);
    const display = new Map(
      (res.body.resources[0].members as { value: string; display: string }[]).map((m) => [m.value, m.display]),
    );
    assert.equal(display.get(named), 'Named Person');
    assert.equal(display.get(formatted), 'Ms. F. Ormatted');
    assert.equal(display.get('BobDriver1'), 'bob@example.com');
  });

  test('a Groups service that is down answers 503', { timeout: 15_000 }, async () => {
    const app = h.app({ groupsAddress: `127.0.0.1:${await freePort()}` });
    const res = await request(app).get('/v1/groups').set('Authorization', `Bearer ${alice}`).expect(503);
    assert.equal(res.headers['retry-after'], '5');
  });
});
