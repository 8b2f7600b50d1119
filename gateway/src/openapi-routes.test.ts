// The /v1 part of the OpenAPI document is derived from the route table: a route's method, scope, limit, parameters,
// body and responses are read from its RouteSpec, so changing the spec changes the document.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { openApiDocument } from './openapi';
import { V1_ROUTES } from './routes';
import { routeLimit, scopesOf, type RouteSpec } from './v1';

interface Operation {
  operationId: string;
  description: string;
  security: { oauth2: string[] }[];
  parameters: { name: string; in: string }[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
}
type Paths = Record<string, Record<string, Operation>>;

const issuer = 'http://127.0.0.1:8081/realms/mileage';
const v1Paths = (routes?: readonly RouteSpec<unknown>[]): Paths =>
  Object.fromEntries(
    Object.entries((openApiDocument({ issuer, routes }) as unknown as { paths: Paths }).paths).filter(([path]) =>
      path.startsWith('/v1/'),
    ),
  );
const operationOf = (paths: Paths, spec: RouteSpec<unknown>) => paths[spec.path]![spec.method]!;

describe('the /v1 OpenAPI document follows the route table', () => {
  test('every route, and nothing else, with its scope, limit, parameters and success status', () => {
    const paths = v1Paths();
    const documented = Object.entries(paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m} ${path}`));
    assert.deepEqual(
      documented,
      V1_ROUTES.map((r) => `${r.method} ${r.path}`),
    );
    for (const spec of V1_ROUTES) {
      const op = operationOf(paths, spec);
      const scopes = scopesOf(spec);
      const { requests, windowSeconds } = routeLimit(spec);
      assert.deepEqual(op.security, [{ oauth2: scopes }], spec.id);
      const scopeText = scopes.map((scope) => `\`${scope}\``).join(' and ');
      const per = windowSeconds === 60 ? 'minute' : 'hour';
      assert.ok(
        op.description.includes(`${scopeText} · **Rate limit** ${requests} requests per ${per} per caller`),
        `${spec.id}: ${op.description}`,
      );
      assert.deepEqual(op.parameters, spec.parameters, spec.id);
      assert.ok(op.responses[String(spec.status ?? 200)], `${spec.id} documents its success status`);
      assert.equal(Boolean(op.requestBody), Boolean(spec.body), spec.id);
      assert.equal(Boolean(op.responses['413']), Boolean(spec.body), `${spec.id}: 413 only with a body`);
      const feed = spec.parameters.some((p) => p.name === 'include_deleted');
      // 410: a change feed's resync, or an export's archive past its expiry.
      const gone = feed || spec.id === 'organization.exports.archive';
      assert.equal(Boolean(op.responses['410']), gone, `${spec.id}: 410 only for a change feed or an expired archive`);
    }
  });

  test('changing a route’s limit and scope changes its documentation and nothing else’s', () => {
    const changed = V1_ROUTES.map((r) =>
      r.id === 'groups.get' ? { ...r, perMinute: 7, scope: 'groups_read_reported_drives' as const } : r,
    );
    const before = v1Paths();
    const after = v1Paths(changed);
    const spec = V1_ROUTES.find((r) => r.id === 'groups.get')!;
    const op = operationOf(after, spec);
    assert.match(
      op.description,
      /\*\*Scope\*\* `groups_read_reported_drives` · \*\*Rate limit\*\* 7 requests per minute/,
    );
    assert.deepEqual(op.security, [{ oauth2: ['groups_read_reported_drives'] }]);
    assert.notDeepEqual(op, operationOf(before, spec));
    for (const other of V1_ROUTES.filter((r) => r !== spec))
      assert.deepEqual(operationOf(after, other), operationOf(before, other), other.id);
  });

  test('a new parameter, body or success status shows in the document', () => {
    const spec = V1_ROUTES.find((r) => r.id === 'users.me')!;
    const extended = {
      ...spec,
      method: 'post' as const,
      status: 201 as const,
      parameters: [{ name: 'verbose', in: 'query' as const, schema: { type: 'boolean' } }],
      body: { schema: 'WebhookCreateRequest', limitBytes: 2048 },
    };
    const paths = v1Paths(V1_ROUTES.map((r) => (r === spec ? extended : r)));
    const op = operationOf(paths, extended);
    assert.equal(paths[spec.path]!.get, undefined);
    assert.deepEqual(
      op.parameters.map((p) => p.name),
      ['verbose'],
    );
    assert.ok(op.responses['201'] && !op.responses['200']);
    assert.match(JSON.stringify(op.responses['413']), /larger than 2 KB/);
  });

  test('a path parameter the route does not declare, or a route without prose, is refused', () => {
    const getUser = V1_ROUTES.find((r) => r.id === 'users.get')!;
    assert.throws(
      () => openApiDocument({ issuer, routes: [{ ...getUser, parameters: [] }] }),
      /declares the path parameters \[\], its path has \[user_id\]/,
    );
    assert.throws(
      () => openApiDocument({ issuer, routes: [{ ...getUser, id: 'users.new' }] }),
      /users\.new has no prose/,
    );
  });
});
