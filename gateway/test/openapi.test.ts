import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import express from 'express';
import request from 'supertest';
import { docsRouter, openApiDocument } from '@mileage/gateway';
import { checkAgainstOpenApi } from './contract';
import { startHarness, type Harness } from './harness';

interface OpenApiResponse {
  $ref?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { example?: unknown; examples?: Record<string, { value: unknown }> }>;
}
interface OpenApi {
  tags: { name: string; description: string }[];
  paths: Record<
    string,
    Record<string, { tags: string[]; description: string; responses: Record<string, OpenApiResponse> }>
  >;
  components: { responses: Record<string, OpenApiResponse> };
}

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
      '/v1/groups/{group_id}/webhooks',
      '/v1/groups/{group_id}/webhooks/{webhook_id}',
      '/v1/groups/{group_id}/webhooks/{webhook_id}/deliveries',
      '/v1/groups/{group_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver',
      '/v1/organization/exports',
      '/v1/organization/exports/{export_id}',
      '/v1/organization/exports/{export_id}/archive',
      '/v1/organization/provisioning-events',
      '/v1/organization/scim-tokens',
      '/v1/organization/scim-tokens/{token_id}',
      '/v1/users/me',
      '/v1/users/me/export',
      '/v1/users/{user_id}',
      '/v1/users/{user_id}/drives',
    ]);
    assert.equal(doc.paths['/v1/drives'].get.deprecated, true);
    const flows = doc.components.securitySchemes.oauth2.flows;
    assert.deepEqual(Object.keys(flows), ['authorizationCode']);
    assert.equal(flows.authorizationCode.authorizationUrl, `${h.issuer}/protocol/openid-connect/auth`);
    assert.equal(flows.authorizationCode.tokenUrl, `${h.issuer}/protocol/openid-connect/token`);
    assert.deepEqual(Object.keys(flows.authorizationCode.scopes).sort(), [
      'drives_read',
      'groups_read',
      'groups_read_reported_drives',
      'organization_manage',
      'users_read',
      'webhooks_manage',
    ]);
    const provisioning = doc.components.securitySchemes.scim.flows;
    assert.deepEqual(Object.keys(provisioning), ['clientCredentials']);
    assert.deepEqual(Object.keys(provisioning.clientCredentials.scopes), ['scim']);
    for (const [path, item] of Object.entries<
      Record<string, { responses: Record<string, unknown>; security: { oauth2: string[] }[] }>
    >(doc.paths)) {
      const scim = path.startsWith('/scim/v2/');
      for (const [method, operation] of Object.entries(item)) {
        const success =
          path.includes('/webhooks') || path.includes('/scim-tokens') || path.endsWith('/exports')
            ? method === 'post'
              ? path.endsWith('/redeliver') || path.endsWith('/exports')
                ? '202'
                : '201'
              : method === 'delete'
                ? '204'
                : '200'
            : '200';
        const statuses = scim
          ? ['400', '401', '403', '413', '429', '503', '504']
          : [success, '401', '403', '422', '429', '503', '504'];
        for (const status of statuses) assert.ok(operation.responses[status], `${method} ${path} documents ${status}`);
        if (scim) assert.deepEqual(operation.security, [{ scim: ['scim'] }, { scimToken: [] }]);
        else assert.equal(operation.security.length, 1);
      }
    }
    assert.deepEqual(Object.keys(doc.paths['/scim/v2/Users/{id}']).sort(), ['delete', 'get', 'patch', 'put']);
    assert.ok(doc.paths['/scim/v2/Groups'].post.responses['501'], 'POST /Groups is documented as 501');
  });

  test('a page people can learn from: tags, rate limits, one description of each error, an example for every response', () => {
    const doc = openApiDocument({ issuer: h.issuer }) as unknown as OpenApi;
    assert.deepEqual(
      doc.tags.map((t) => t.name),
      ['External API', 'SCIM 2.0'],
    );
    assert.ok(doc.tags.every((t) => t.description.length > 80));
    assert.match(doc.tags[1]!.description, /client-credentials grant/);
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(doc, 'openapi');
    const resolve = (response: OpenApiResponse): [OpenApiResponse, string] | undefined => {
      const name = response.$ref?.replace('#/components/responses/', '');
      return name ? [doc.components.responses[name]!, `openapi#/components/responses/${name}`] : undefined;
    };
    let examples = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const v1 = path.startsWith('/v1/');
        assert.deepEqual(operation.tags, [v1 ? 'External API' : 'SCIM 2.0'], `${method} ${path}`);
        // The /v1 limits themselves are checked against the route table in openapi-routes.test.ts.
        assert.match(
          operation.description,
          v1 ? /\*\*Rate limit\*\* \d+ requests per (minute|hour) per caller/ : /1,200 requests per minute/,
        );
        if (v1)
          for (const status of ['401', '403', '422', '429', '503'])
            assert.ok(operation.responses[status]!.$ref, `${method} ${path} ${status} refers to the one description`);
        for (const [status, declared] of Object.entries(operation.responses)) {
          const [response, at] = resolve(declared) ?? [
            declared,
            `openapi#/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/${method}/responses/${status}`,
          ];
          for (const [mediaType, content] of Object.entries(response.content ?? {})) {
            const values = content.examples ? Object.values(content.examples).map((e) => e.value) : [content.example];
            assert.ok(values.length && values.every((v) => v !== undefined), `${method} ${path} ${status}: example`);
            const validate = ajv.getSchema(`${at}/content/${mediaType.replace('/', '~1')}/schema`)!;
            for (const value of values) {
              assert.ok(validate(value), `${method} ${path} ${status}: ${ajv.errorsText(validate.errors)}`);
              examples++;
            }
          }
        }
      }
    }
    assert.ok(examples > 100, `${examples} examples checked`);
    const errors = doc.components.responses;
    assert.deepEqual(Object.keys(errors.TooManyRequests!.headers!).sort(), [
      'RateLimit',
      'RateLimit-Policy',
      'Retry-After',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'X-Request-Id',
    ]);
    assert.ok(errors.Unauthorized!.headers!['WWW-Authenticate']);
    assert.ok(errors.ServiceUnavailable!.headers!['Retry-After']);
  });

  test('/docs works without internet access: its assets are served locally, its script is no inline one', async () => {
    const app = h.app();
    const page = await request(app).get('/docs').expect(200).expect('Content-Type', /html/);
    assert.match(page.text, /src="\/docs\/assets\/swagger-ui-bundle.js"/);
    assert.doesNotMatch(page.text, /https?:\/\//);
    assert.doesNotMatch(page.text, /<script>/, 'no inline script');
    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, new RegExp(`connect-src 'self' ${new URL(h.issuer).origin}(;|$)`));
    assert.match(csp, /frame-ancestors 'none'/);
    const bundle = await request(app).get('/docs/assets/swagger-ui-bundle.js').expect(200);
    assert.ok(bundle.text.length > 100_000);
  });

  test('/docs signs in with the public client mileage-docs and PKCE, and serves its OAuth2 redirect page', async () => {
    const app = h.app();
    const init = await request(app)
      .get('/docs/init.js')
      .expect(200)
      .expect('Content-Type', /javascript/);
    assert.match(init.text, /initOAuth\(\{"clientId":"mileage-docs"/);
    assert.match(init.text, /"usePkceWithAuthorizationCodeGrant":true/);
    assert.match(init.text, /oauth2RedirectUrl: window\.location\.origin \+ "\/docs\/oauth2-redirect\.html"/);
    assert.match(init.text, /"validatorUrl":null/);
    const redirect = await request(app).get('/docs/oauth2-redirect.html').expect(200).expect('Content-Type', /html/);
    assert.match(redirect.text, /<script src="oauth2-redirect.js"><\/script>/);
    const script = await request(app).get('/docs/oauth2-redirect.js').expect(200);
    assert.match(script.text, /swaggerUIRedirectOauth2/);
    const off = await request(express().use(docsRouter({ issuer: h.issuer, clientId: '' })))
      .get('/docs/init.js')
      .expect(200);
    assert.doesNotMatch(off.text, /initOAuth/);
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
