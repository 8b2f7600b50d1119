#!/usr/bin/env node
// Checks a running Keycloak realm `mileage` against what the platform needs (CONTRACT §5):
//   node smoke-test.mjs <issuer>   (MILEAGE_SCIM_CLIENT_SECRET, default scim-dev-secret; demo password "demo")
import assert from 'node:assert/strict';

const issuer = (process.argv[2] ?? 'http://127.0.0.1:8180/realms/mileage').replace(/\/$/, '');
const secret = process.env.MILEAGE_SCIM_CLIENT_SECRET ?? 'scim-dev-secret';
const claims = (token) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());

async function token(form, basic) {
  const res = await fetch(`${issuer}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(basic ? { authorization: `Basic ${Buffer.from(basic).toString('base64')}` } : {}) },
    body: new URLSearchParams(form),
  });
  return { status: res.status, body: await res.json() };
}

const discovery = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
assert.equal(discovery.issuer, issuer);
assert.ok(discovery.code_challenge_methods_supported.includes('S256'));

const alice = await token({ grant_type: 'password', client_id: 'mileage-dev', username: 'alice@example.com', password: 'demo', scope: 'users_read drives_read' });
assert.equal(alice.status, 200, JSON.stringify(alice.body));
const a = claims(alice.body.access_token);
assert.equal(a.iss, issuer);
assert.ok([a.aud].flat().includes('mileage-api'), `aud ${JSON.stringify(a.aud)}`);
assert.equal(a.user_id, 'AliceAdm01');
assert.ok(a.sub, 'sub is present');
assert.deepEqual(a.scope.split(' ').sort(), ['drives_read', 'users_read'], `scope "${a.scope}"`);
const narrow = claims((await token({ grant_type: 'password', client_id: 'mileage-dev', username: 'alice@example.com', password: 'demo', scope: 'users_read' })).body.access_token);
assert.ok(!narrow.scope.split(' ').includes('drives_read'), 'a scope not asked for is not granted');

const scim = await token({ grant_type: 'client_credentials', scope: 'scim' }, `mileage-scim:${secret}`);
assert.equal(scim.status, 200, JSON.stringify(scim.body));
const s = claims(scim.body.access_token);
assert.equal(s.azp, 'mileage-scim');
assert.ok([s.aud].flat().includes('mileage-api'));
assert.equal(s.user_id, undefined);
assert.ok(s.scope.split(' ').includes('scim'));
const overreach = await token({ grant_type: 'client_credentials', scope: 'scim users_read' }, `mileage-scim:${secret}`);
assert.ok(overreach.status !== 200 || !claims(overreach.body.access_token).scope.split(' ').includes('users_read'), 'mileage-scim cannot get users_read');
assert.notEqual((await token({ grant_type: 'client_credentials', scope: 'scim' }, 'mileage-scim:wrong-secret')).status, 200);
assert.notEqual((await token({ grant_type: 'password', client_id: 'mileage-scim', username: 'alice@example.com', password: 'demo' }, `mileage-scim:${secret}`)).status, 200, 'no password grant for mileage-scim');

const jwks = await (await fetch(discovery.jwks_uri)).json();
assert.ok(jwks.keys.some((k) => k.kty === 'RSA' && k.alg === 'RS256' && k.use === 'sig'));

// The example integration: authorization code with PKCE S256 is enforced (OAuth 2.1 client policy).
const auth = (params) => fetch(`${discovery.authorization_endpoint}?${new URLSearchParams({ client_id: 'mileage-example-integration', response_type: 'code', redirect_uri: 'https://payroll.example.com/oauth/callback', scope: 'openid users_read', state: 'x', ...params })}`, { redirect: 'manual' });
const withoutPkce = await auth({});
const location = withoutPkce.headers.get('location') ?? '';
assert.ok(withoutPkce.status >= 300 && /error=/.test(location) || withoutPkce.status === 400, `an authorization request without PKCE is refused (${withoutPkce.status} ${location})`);
const withPkce = await auth({ code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
assert.equal(withPkce.status, 200, 'with PKCE S256 the login page is shown');
const implicit = await auth({ response_type: 'token', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
assert.ok(implicit.status !== 200 || !(await implicit.text()).includes('kc-form-login'), 'no implicit grant');

console.log(`realm mileage at ${issuer}: discovery, scopes, audience, user_id, client credentials, JWKS and PKCE enforcement as the platform needs`);
