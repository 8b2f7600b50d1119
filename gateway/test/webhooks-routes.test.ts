import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { startHarness, type Harness } from './harness';

let h: Harness;
let alice: string;
let bob: string;
let receiver: http.Server;
let target: string;

before(async () => {
  h = await startHarness();
  alice = await h.token('alice@example.com', 'webhooks_manage');
  bob = await h.token('bob@example.com', 'webhooks_manage');
  receiver = http.createServer((_req, res) => res.writeHead(204).end());
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
after(async () => {
  receiver.close();
  await h.close();
});

const base = () => `/v1/groups/${h.groups.demo}/webhooks`;

describe('/v1/groups/{group_id}/webhooks (+)', () => {
  test('create shows the secret once; list, delivery log and delete', async () => {
    const app = h.app();
    const created = await request(app)
      .post(base())
      .set('Authorization', `Bearer ${alice}`)
      .send({ url: target, events: ['drive.reported', 'drive.deleted'] })
      .expect(201);
    assert.equal(created.headers['x-ratelimit-limit'], '30');
    assert.match(created.body.secret, /^whsec_[A-Za-z0-9+/=]{40,}$/);
    assert.match(created.body.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(
      { ...created.body, id: undefined, secret: undefined, created: undefined },
      {
        url: target,
        events: ['drive.reported', 'drive.deleted'],
        status: 'active',
        disabled_reason: null,
        disabled_at: null,
        failure_run: 0,
        id: undefined,
        secret: undefined,
        created: undefined,
      },
    );
    const list = await request(app).get(base()).set('Authorization', `Bearer ${alice}`).expect(200);
    assert.equal(list.body.results.length, 1);
    assert.equal(list.body.results[0].id, created.body.id);
    assert.equal(JSON.stringify(list.body).includes('whsec_'), false, 'the secret is never shown again');

    const log = await request(app)
      .get(`${base()}/${created.body.id}/deliveries?limit=5`)
      .set('Authorization', `Bearer ${alice}`)
      .expect(200);
    assert.deepEqual(log.body, { results: [], has_more: false });
    const again = await request(app)
      .post(base())
      .set('Authorization', `Bearer ${alice}`)
      .send({ url: target, events: ['drive.deleted'] })
      .expect(409);
    assert.match(again.body.detail, /already has a webhook for this URL/);
    await request(app)
      .post(`${base()}/${created.body.id}/deliveries/123/redeliver`)
      .set('Authorization', `Bearer ${alice}`)
      .expect(404);

    const gone = await request(app)
      .delete(`${base()}/${created.body.id}`)
      .set('Authorization', `Bearer ${alice}`)
      .expect(204);
    assert.equal(gone.text, '');
    await request(app).delete(`${base()}/${created.body.id}`).set('Authorization', `Bearer ${alice}`).expect(404);
    await request(app)
      .get(`${base()}/${created.body.id}/deliveries`)
      .set('Authorization', `Bearer ${alice}`)
      .expect(404);
  });

  test('check order: token 401 → scope 403 → validation 422 → admin 403 → existence 404', async () => {
    const app = h.app();
    await request(app).get(base()).expect(401);
    await request(app)
      .post(base())
      .send({ url: target, events: ['drive.reported'] })
      .expect(401);
    const readOnly = await h.token('alice@example.com', 'groups_read');
    const scope = await request(app).post(base()).set('Authorization', `Bearer ${readOnly}`).send({}).expect(403);
    assert.equal(
      scope.headers['www-authenticate'],
      'Bearer realm="mileage", error="insufficient_scope", scope="webhooks_manage"',
    );
    // Validation comes before the admin check (Bob is no admin of the demo group).
    const invalid = await request(app)
      .post(base())
      .set('Authorization', `Bearer ${bob}`)
      .send({ url: 42, events: ['drive.reported', 'drive.exploded'] })
      .expect(422);
    assert.deepEqual(
      invalid.body.detail.map((d: { loc: unknown[] }) => d.loc),
      [
        ['body', 'url'],
        ['body', 'events', 1],
      ],
    );
    const missing = await request(app).post(base()).set('Authorization', `Bearer ${alice}`).send({}).expect(422);
    assert.deepEqual(
      missing.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc.join('.'), d.type]),
      [
        ['body.url', 'missing'],
        ['body.events', 'missing'],
      ],
    );
    const notJson = await request(app)
      .post(base())
      .set('Authorization', `Bearer ${alice}`)
      .set('Content-Type', 'application/json')
      .send('{"url": ')
      .expect(422);
    assert.equal(notJson.body.detail[0].type, 'json_invalid');
    const empty = await request(app)
      .post(base())
      .set('Authorization', `Bearer ${alice}`)
      .send({ url: target, events: [] })
      .expect(422);
    assert.deepEqual(empty.body.detail[0].loc, ['body', 'events']);
    await request(app).get('/v1/groups/abc/webhooks').set('Authorization', `Bearer ${alice}`).expect(422);
    const badId = await request(app).delete(`${base()}/nope`).set('Authorization', `Bearer ${alice}`).expect(422);
    assert.deepEqual(badId.body.detail[0].loc, ['path', 'webhook_id']);
    const badLimit = await request(app)
      .get(`${base()}/00000000-0000-4000-8000-000000000000/deliveries?limit=0`)
      .set('Authorization', `Bearer ${alice}`)
      .expect(422);
    assert.deepEqual(badLimit.body.detail[0].loc, ['query', 'limit']);

    // Admins of that group only; an unknown group looks the same (no existence oracle).
    await request(app).get(base()).set('Authorization', `Bearer ${bob}`).expect(403);
    await request(app)
      .post(base())
      .set('Authorization', `Bearer ${bob}`)
      .send({ url: target, events: ['drive.reported'] })
      .expect(403);
    const unknown = await request(app)
      .get('/v1/groups/987654/webhooks')
      .set('Authorization', `Bearer ${alice}`)
      .expect(403);
    const notAdmin = await request(app)
      .get(`/v1/groups/${h.groups.other}/webhooks`)
      .set('Authorization', `Bearer ${alice}`)
      .expect(403);
    assert.deepEqual(unknown.body, notAdmin.body);
    await request(app)
      .delete(`${base()}/00000000-0000-4000-8000-000000000000`)
      .set('Authorization', `Bearer ${alice}`)
      .expect(404);
    const ivan = await h.token('ivan@example.com', 'webhooks_manage');
    await request(app).get(base()).set('Authorization', `Bearer ${ivan}`).expect(403);
    await request(app)
      .put(base())
      .set('Authorization', `Bearer ${alice}`)
      .expect(405)
      .expect('Allow', 'GET, HEAD, POST');
  });

  test('hostile target URLs are refused with a 422 on body.url', async () => {
    const app = h.app();
    for (const url of [
      'http://10.0.0.1/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00::1]/hook',
      'file:///etc/passwd',
      'gopher://127.0.0.1:6379/_',
      'http://user:pw@127.0.0.1/hook',
    ]) {
      const res = await request(app)
        .post(base())
        .set('Authorization', `Bearer ${alice}`)
        .send({ url, events: ['drive.reported'] })
        .expect(422);
      assert.deepEqual(res.body.detail[0].loc, ['body', 'url'], url);
    }
    const list = await request(app).get(base()).set('Authorization', `Bearer ${alice}`).expect(200);
    assert.deepEqual(list.body.results, []);
  });
});
