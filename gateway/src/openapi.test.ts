import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { openApiDocument } from './openapi';
import { checkAgainstOpenApi } from './testing/contract';
import { startHarness, type Harness } from './testing/harness';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

describe('the OpenAPI document and its documentation page', () => {
  test('/openapi.json describes every /v1 and /scim/v2 route with OAuth2 flows and scopes', async () => {
    const res = await request(h.app()).get('/openapi.json').expect(200).expect('Content-Type', /json/);
    const doc = res.body;
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '2.0.0');
    assert.deepEqual(Object.keys(doc.paths).sort(), [
      '/scim/v2/.search',
      '/scim/v2/Groups',
      '/scim/v2/Groups/.search',
      '/scim/v2/Groups/{id}',
      '/scim/v2/ResourceTypes',
      '/scim/v2/ResourceTypes/{id}',
      '/scim/v2/Schemas',
      '/scim/v2/Schemas/{id}',
      '/scim/v2/ServiceProviderConfig',
      '/scim/v2/Users',
      '/scim/v2/Users/.search',
      '/scim/v2/Users/{id}',
      '/v1/drives',
      '/v1/groups',
      '/v1/groups/{group_id}',
      '/v1/groups/{group_id}/reported-drives',
      '/v1/users/me',
      '/v1/users/{user_id}',
      '/v1/users/{user_id}/drives',
    ]);
    assert.equal(doc.paths['/v1/drives'].get.deprecated, true);
    const flows = doc.components.securitySchemes.oauth2.flows;
    assert.equal(flows.authorizationCode.tokenUrl, `${h.issuer}/protocol/openid-connect/token`);
    assert.deepEqual(Object.keys(flows.authorizationCode.scopes).sort(), [
      'drives_read',
      'groups_read',
      'groups_read_reported_drives',
      'users_read',
    ]);
    assert.deepEqual(Object.keys(flows.clientCredentials.scopes), ['scim']);
    for (const [path, item] of Object.entries<
      Record<string, { responses: Record<string, unknown>; security: { oauth2: string[] }[] }>
    >(doc.paths)) {
      const scim = path.startsWith('/scim/v2/');
      for (const [method, operation] of Object.entries(item)) {
        const statuses = scim
          ? ['400', '401', '403', '413', '429', '503', '504']
          : ['200', '401', '403', '422', '429', '503', '504'];
        for (const status of statuses) assert.ok(operation.responses[status], `${method} ${path} documents ${status}`);
        if (scim) assert.deepEqual(operation.security, [{ oauth2: ['scim'] }]);
      }
    }
    assert.deepEqual(Object.keys(doc.paths['/scim/v2/Users/{id}']).sort(), ['delete', 'get', 'patch', 'put']);
    assert.ok(doc.paths['/scim/v2/Groups'].post.responses['501'], 'POST /Groups is documented as 501');
  });

  test('/docs works without internet access: its assets are served locally', async () => {
    const app = h.app();
    const page = await request(app).get('/docs').expect(200).expect('Content-Type', /html/);
    assert.match(page.text, /src="\/docs\/assets\/swagger-ui-bundle.js"/);
    assert.doesNotMatch(page.text, /https?:\/\//);
    const bundle = await request(app).get('/docs/assets/swagger-ui-bundle.js').expect(200);
    assert.ok(bundle.text.length > 100_000);
  });

  test('the contract check catches a response that does not match the document', () => {
    const doc = openApiDocument({ issuer: h.issuer }) as never;
    const problems = checkAgainstOpenApi(doc, [
      {
        method: 'GET',
        path: '/v1/users/me',
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({ id: 'AliceAdm01', userName: 'a' }),
      },
      { method: 'GET', path: '/v1/groups/7', status: 418, contentType: 'application/json', body: '{}' },
      {
        method: 'GET',
        path: '/v1/users/me',
        status: 401,
        contentType: 'application/json',
        body: JSON.stringify({ detail: 'x', type: 'about:blank', title: 'Unauthorized', status: 401 }),
      },
    ]);
    assert.equal(problems.length, 2, problems.join('\n'));
    assert.match(problems[0]!, /must have required property 'name'/);
    assert.match(problems[1]!, /418: status not documented/);
  });
});
