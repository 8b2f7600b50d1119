import assert from 'node:assert/strict';
import { test } from 'node:test';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import request from 'supertest';
import { routeTable, type TableRoute } from './route-table';

// Routes shaped like the /v1 table: a literal before a parameter, two methods on one path, two parameters, a body.
const echo =
  (name: string): RequestHandler =>
  (req, res) => {
    res.json({ route: name, params: req.params });
  };
const ROUTES: TableRoute[] = [
  { method: 'get', path: '/v1/users/me', handlers: [echo('me')] },
  { method: 'get', path: '/v1/users/{user_id}', handlers: [echo('user')] },
  { method: 'get', path: '/v1/groups/{group_id}/webhooks', handlers: [echo('list')] },
  {
    method: 'post',
    path: '/v1/groups/{group_id}/webhooks',
    handlers: [express.raw({ type: () => true, limit: 16 }), (req, res) => res.json({ bytes: req.body.length })],
  },
  { method: 'delete', path: '/v1/groups/{group_id}/webhooks/{webhook_id}', handlers: [echo('delete')] },
  { method: 'get', path: '/v1/fails', handlers: [() => Promise.reject(new Error('rejected'))] },
  {
    method: 'get',
    path: '/v1/throws',
    handlers: [
      (_req, _res, next) => next(),
      () => {
        throw new Error('thrown');
      },
    ],
  },
];

const errors: ErrorRequestHandler = (err: { status?: number; message: string }, _req, res, _next) => {
  res.status(err.status ?? 500).json({ error: err.message });
};
const fallThrough: RequestHandler = (req, res) => res.status(404).json({ unmatched: `${req.method} ${req.path}` });

/** The same routes as Express mounts them one by one (`:name` parameters). */
function mountedOneByOne(): Express {
  const app = express();
  for (const { method, path, handlers } of ROUTES) app[method](path.replace(/\{([a-z_]+)\}/g, ':$1'), ...handlers);
  return app.use(fallThrough).use(errors);
}

function asTable(): Express {
  return express().use(routeTable('/v1/', ROUTES)).use(fallThrough).use(errors);
}

const REQUESTS: [method: string, path: string][] = [
  ['GET', '/v1/users/me'],
  ['GET', '/v1/users/AliceAdm01'],
  ['GET', '/V1/Users/AliceAdm01/'],
  ['GET', '/v1/users/me/'],
  ['GET', '/v1/users/Alice%20Adm'],
  ['GET', '/v1/users/%E2%82%AC?x=1'],
  ['GET', '/v1/users/%zz'],
  ['POST', '/v1/users/%zz'],
  ['DELETE', '/v1/groups/%zz/webhooks'],
  ['GET', '/v1/users/'],
  ['GET', '/v1/users/a/b'],
  ['GET', '/v1/users//'],
  ['HEAD', '/v1/users/AliceAdm01'],
  ['POST', '/v1/users/me'],
  ['OPTIONS', '/v1/users/me'],
  ['OPTIONS', '/v1/groups/7/webhooks'],
  ['OPTIONS', '/v1/nowhere'],
  ['GET', '/v1/groups/7/webhooks'],
  ['DELETE', '/v1/groups/7/webhooks/w%2F1'],
  ['GET', '/v1/groups/7/webhooks/w1'],
  ['GET', '/v1/fails'],
  ['GET', '/v1/throws'],
  ['GET', '/healthz'],
  ['GET', '/v1'],
];

test("the table answers every request as Express's router does with the routes mounted one by one", async () => {
  const [expected, table] = [mountedOneByOne(), asTable()];
  for (const [method, path] of REQUESTS) {
    const send = (app: Express) => request(app)[method.toLowerCase() as 'get'](path);
    const [want, got] = [await send(expected), await send(table)];
    const what = `${method} ${path}`;
    assert.equal(got.status, want.status, what);
    assert.deepEqual(got.body, want.body, what);
    assert.equal(got.text, want.text, what);
    assert.equal(got.headers.allow, want.headers.allow, what);
    assert.equal(got.headers['content-type'], want.headers['content-type'], what);
  }
});

test('a body is read by the route that declares it, and one over its limit is refused', async () => {
  for (const app of [mountedOneByOne(), asTable()]) {
    const url = '/v1/groups/7/webhooks';
    await request(app).post(url).send('0123456789').expect(200, { bytes: 10 });
    await request(app).post(url).send('0123456789abcdefg').expect(413);
  }
});

test('a matched route is told its parameters, decoded; the first route of the table wins', async () => {
  const app = asTable();
  await request(app).get('/v1/users/me').expect(200, { route: 'me', params: {} });
  await request(app)
    .get('/v1/users/Al%C3%AFce')
    .expect(200, { route: 'user', params: { user_id: 'Alïce' } });
  await request(app)
    .delete('/v1/groups/7/webhooks/w%2F1')
    .expect(200, { route: 'delete', params: { group_id: '7', webhook_id: 'w/1' } });
  await request(app).get('/v1/users/%zz').expect(400, { error: "Failed to decode param '%zz'" });
  await request(app).options('/v1/groups/7/webhooks').expect(404, { unmatched: 'OPTIONS /v1/groups/7/webhooks' });
});

test("the table tells the methods its routes take at a path, for a 405's Allow, matched as its requests are", () => {
  const table = routeTable('/v1/', ROUTES);
  assert.equal(table.allowedAt('/v1/users/me'), 'GET, HEAD');
  assert.equal(table.allowedAt('/v1/groups/7/webhooks'), 'GET, HEAD, POST');
  assert.equal(table.allowedAt('/V1/Groups/7/webhooks/'), 'GET, HEAD, POST');
  assert.equal(table.allowedAt('/v1/groups/7/webhooks/w1'), 'DELETE');
  assert.equal(table.allowedAt('/v1/nowhere'), undefined);
  assert.equal(table.allowedAt('/healthz'), undefined);
});
