import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { rotateKeys } from './keys.js';
import { startIdentityProvider, type IdentityProvider } from './provider.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'dev-idp-test-'));
let idp: IdentityProvider;

before(async () => {
  idp = await startIdentityProvider({ port: 0, dataDir, scimClientSecret: 'scim-test-secret' });
});
after(async () => {
  await idp.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function tokenRequest(params: Record<string, string>, basic?: string) {
  const res = await fetch(idp.tokenEndpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(basic ? { authorization: `Basic ${Buffer.from(basic).toString('base64')}` } : {}),
    },
    body: new URLSearchParams(params),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

const password = (username: string, pw: string, scope: string) =>
  tokenRequest({ grant_type: 'password', client_id: 'mileage-dev', username, password: pw, scope });

async function verify(token: string) {
  return jwtVerify(token, createRemoteJWKSet(new URL(idp.jwksUri)), {
    issuer: idp.issuer,
    audience: 'mileage-api',
    algorithms: ['RS256'],
  });
}

/** `fetch` as a browser tab sends it: redirects not followed, cookies kept across requests. */
function browserSession() {
  const jar = new Map<string, string>();
  return async (url: string, init: RequestInit = {}) => {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        ...(init.headers as Record<string, string>),
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
      },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const [k, v] = pair!.split('=');
      jar.set(k!, v ?? '');
    }
    return res;
  };
}

/** Signs alice in through the login form (a wrong password first) and returns the authorization code. */
async function signIn(params: Record<string, string>): Promise<string> {
  const send = browserSession();
  const auth = new URL(`${idp.issuer}/protocol/openid-connect/auth`);
  auth.search = new URLSearchParams({ response_type: 'code', state: 'st4te', ...params }).toString();
  let res = await send(auth.toString());
  assert.equal(res.status, 303, await res.text());
  const loginUrl = new URL(res.headers.get('location')!, idp.issuer).toString();
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const wrong = await send(loginUrl, {
    method: 'POST',
    headers: form,
    body: 'username=alice%40example.com&password=x',
  });
  assert.match(await wrong.text(), /Invalid username or password/);
  res = await send(loginUrl, { method: 'POST', headers: form, body: 'username=alice%40example.com&password=demo' });
  let location = res.headers.get('location');
  for (let hops = 0; location && !location.startsWith(params.redirect_uri!) && hops < 10; hops++) {
    res = await send(new URL(location, idp.issuer).toString());
    location = res.headers.get('location');
  }
  assert.ok(location?.startsWith(params.redirect_uri!), `ended at ${location} ${res.status}`);
  return new URL(location!).searchParams.get('code')!;
}

describe('development identity provider', () => {
  test('serves discovery with Keycloak paths and only the code flow', async () => {
    const res = await fetch(`${idp.issuer}/.well-known/openid-configuration`);
    const doc = (await res.json()) as Record<string, unknown>;
    assert.equal(doc.issuer, idp.issuer);
    assert.match(idp.issuer, /^http:\/\/127\.0\.0\.1:\d+\/realms\/mileage$/);
    assert.equal(doc.token_endpoint, `${idp.issuer}/protocol/openid-connect/token`);
    assert.equal(doc.jwks_uri, `${idp.issuer}/protocol/openid-connect/certs`);
    assert.equal(doc.authorization_endpoint, `${idp.issuer}/protocol/openid-connect/auth`);
    assert.deepEqual(doc.response_types_supported, ['code']);
    assert.deepEqual(doc.code_challenge_methods_supported, ['S256']);
  });

  test('password grant issues a signed JWT access token with Keycloak claim shapes', async () => {
    const { status, body } = await password('Alice@Example.com', 'demo', 'users_read drives_read');
    assert.equal(status, 200);
    assert.equal(body.token_type, 'Bearer');
    const { payload, protectedHeader } = await verify(body.access_token!);
    assert.equal(protectedHeader.alg, 'RS256');
    assert.ok(protectedHeader.kid);
    assert.equal(payload.iss, idp.issuer);
    assert.equal(payload.aud, 'mileage-api');
    assert.equal(payload.sub, 'AliceAdm01');
    assert.equal(payload.user_id, 'AliceAdm01');
    assert.equal(payload.azp, 'mileage-dev');
    assert.equal(payload.typ, 'Bearer');
    assert.equal(payload.preferred_username, 'alice@example.com');
    assert.equal(payload.scope, 'users_read drives_read');
    assert.ok(payload.jti && payload.iat && payload.exp);
    assert.equal(payload.exp! - payload.iat!, 300);
  });

  test('scopes are optional client scopes: only what was asked for and allowed', async () => {
    const none = await password('bob@example.com', 'demo', '');
    assert.equal(none.status, 200);
    assert.equal((await verify(none.body.access_token!)).payload.scope, undefined);
    const refused = await password('bob@example.com', 'demo', 'users_read scim');
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error, 'invalid_scope');
  });

  test('wrong password and unknown user are invalid_grant', async () => {
    assert.equal((await password('alice@example.com', 'wrong', 'users_read')).body.error, 'invalid_grant');
    assert.equal((await password('mallory@example.com', 'demo', 'users_read')).body.error, 'invalid_grant');
  });

  test('client credentials for mileage-scim: scope scim, no user_id; wrong secret is invalid_client', async () => {
    const ok = await tokenRequest({ grant_type: 'client_credentials', scope: 'scim' }, 'mileage-scim:scim-test-secret');
    assert.equal(ok.status, 200);
    const { payload } = await verify(ok.body.access_token!);
    assert.equal(payload.scope, 'scim');
    assert.equal(payload.azp, 'mileage-scim');
    assert.equal(payload.user_id, undefined);
    const bad = await tokenRequest({ grant_type: 'client_credentials', scope: 'scim' }, 'mileage-scim:wrong-secret');
    assert.equal(bad.status, 401);
    assert.equal(bad.body.error, 'invalid_client');
    const notAllowed = await tokenRequest(
      { grant_type: 'client_credentials', scope: 'users_read' },
      'mileage-scim:scim-test-secret',
    );
    assert.equal(notAllowed.body.error, 'invalid_scope');
  });

  test('client credentials for mileage-scim-globex: its tokens name the organization globex (org_id); mileage-scim none', async () => {
    const globex = await tokenRequest(
      { grant_type: 'client_credentials', scope: 'scim' },
      'mileage-scim-globex:scim-globex-dev-secret',
    );
    assert.equal(globex.status, 200);
    const { payload } = await verify(globex.body.access_token!);
    assert.equal(payload.org_id, 'globex');
    assert.equal(payload.azp, 'mileage-scim-globex');
    assert.equal(payload.scope, 'scim');
    const demo = await tokenRequest(
      { grant_type: 'client_credentials', scope: 'scim' },
      'mileage-scim:scim-test-secret',
    );
    assert.equal((await verify(demo.body.access_token!)).payload.org_id, undefined);
    const alice = await password('alice@example.com', 'demo', 'users_read');
    assert.equal((await verify(alice.body.access_token!)).payload.org_id, undefined, 'no user token names one');
    const wrong = await tokenRequest(
      { grant_type: 'client_credentials', scope: 'scim' },
      'mileage-scim-globex:scim-test-secret',
    );
    assert.equal(wrong.body.error, 'invalid_client');
  });

  test("Globex's people sign in; organization_manage is an optional scope of the user clients", async () => {
    const erin = await password('erin@globex.example', 'demo', 'organization_manage groups_read');
    assert.equal(erin.status, 200);
    const { payload } = await verify(erin.body.access_token!);
    assert.equal(payload.user_id, 'ErinAdmin1');
    assert.equal(payload.scope, 'organization_manage groups_read');
    const frank = await password('frank@globex.example', 'demo', 'drives_read');
    assert.equal((await verify(frank.body.access_token!)).payload.user_id, 'FrankDrv01');
    const provisioningClient = await tokenRequest(
      { grant_type: 'client_credentials', scope: 'organization_manage' },
      'mileage-scim-globex:scim-globex-dev-secret',
    );
    assert.equal(provisioningClient.body.error, 'invalid_scope', 'a provisioning client manages no organization');
  });

  test('authorization code with PKCE through the login form', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const redirectUri = 'http://127.0.0.1:8765/callback';
    const send = browserSession();
    const auth = new URL(`${idp.issuer}/protocol/openid-connect/auth`);
    auth.search = new URLSearchParams({
      client_id: 'mileage-example',
      response_type: 'code',
      redirect_uri: redirectUri,
      scope: 'openid users_read groups_read',
      state: 'st4te',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }).toString();
    let res = await send(auth.toString());
    assert.equal(res.status, 303);
    const loginUrl = new URL(res.headers.get('location')!, idp.issuer).toString();
    res = await send(loginUrl);
    const form = await res.text();
    assert.match(form, /<form method="post"/);
    const wrong = await send(loginUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'username=alice%40example.com&password=nope',
    });
    assert.match(await wrong.text(), /Invalid username or password/);
    res = await send(loginUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'username=alice%40example.com&password=demo',
    });
    let location = res.headers.get('location');
    // Follow redirects (resume authorization, implied consent) until the client's redirect URI.
    for (let hops = 0; location && !location.startsWith(redirectUri) && hops < 10; hops++) {
      res = await send(new URL(location, idp.issuer).toString());
      location = res.headers.get('location');
    }
    assert.ok(location?.startsWith(redirectUri), `ended at ${location} ${res.status} ${await res.text()}`);
    const callback = new URL(location!);
    assert.equal(callback.searchParams.get('state'), 'st4te');
    const code = callback.searchParams.get('code')!;
    const exchanged = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: 'mileage-example',
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    });
    assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
    const { payload } = await verify(exchanged.body.access_token!);
    assert.equal(payload.user_id, 'AliceAdm01');
    assert.equal(payload.azp, 'mileage-example');
    assert.deepEqual(String(payload.scope).split(' ').sort(), ['groups_read', 'users_read']);
    const replay = await tokenRequest({
      grant_type: 'authorization_code',
      client_id: 'mileage-example',
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    });
    assert.equal(replay.body.error, 'invalid_grant', 'a code is single-use');
  });

  test('an authorization request without PKCE is refused', async () => {
    const auth = new URL(`${idp.issuer}/protocol/openid-connect/auth`);
    auth.search = new URLSearchParams({
      client_id: 'mileage-example',
      response_type: 'code',
      redirect_uri: 'http://127.0.0.1:8765/callback',
      scope: 'openid users_read',
    }).toString();
    const res = await fetch(auth, { redirect: 'manual' });
    const location = new URL(res.headers.get('location')!);
    assert.equal(location.searchParams.get('error'), 'invalid_request');
    assert.match(location.searchParams.get('error_description')!, /PKCE/);
  });

  test('the documentation page client: code + PKCE from /docs/oauth2-redirect.html, CORS for its origin only', async () => {
    const docsOrigin = 'http://127.0.0.1:8080';
    const redirectUri = `${docsOrigin}/docs/oauth2-redirect.html`;
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const code = await signIn({
      client_id: 'mileage-docs',
      redirect_uri: redirectUri,
      scope: 'users_read groups_read_reported_drives webhooks_manage',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    // Swagger UI exchanges the code from the page: a preflighted cross-origin POST.
    const preflight = await fetch(idp.tokenEndpoint, {
      method: 'OPTIONS',
      headers: {
        origin: docsOrigin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-requested-with',
      },
    });
    assert.ok(preflight.status < 300, `preflight ${preflight.status}`);
    assert.equal(preflight.headers.get('access-control-allow-origin'), docsOrigin);
    const exchange = (origin: string, codeVerifier = verifier) =>
      fetch(idp.tokenEndpoint, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          client_id: 'mileage-docs',
          code,
          redirect_uri: redirectUri,
          code_verifier: codeVerifier,
        }),
      });
    const foreign = await exchange('http://evil.example');
    assert.equal(foreign.status, 400);
    assert.equal(foreign.headers.get('access-control-allow-origin'), null);
    const wrongVerifier = await exchange(docsOrigin, randomBytes(32).toString('base64url'));
    assert.equal(((await wrongVerifier.json()) as { error: string }).error, 'invalid_grant');

    const secondCode = await signIn({
      client_id: 'mileage-docs',
      redirect_uri: redirectUri,
      scope: 'users_read groups_read_reported_drives webhooks_manage',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const ok = await fetch(idp.tokenEndpoint, {
      method: 'POST',
      headers: { origin: docsOrigin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: 'mileage-docs',
        code: secondCode,
        redirect_uri: redirectUri,
        code_verifier: verifier,
      }),
    });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('access-control-allow-origin'), docsOrigin);
    const { payload } = await verify(((await ok.json()) as { access_token: string }).access_token);
    assert.equal(payload.user_id, 'AliceAdm01');
    assert.equal(payload.azp, 'mileage-docs');
    assert.deepEqual(String(payload.scope).split(' ').sort(), [
      'groups_read_reported_drives',
      'users_read',
      'webhooks_manage',
    ]);
  });

  test('the documentation page client gets no scim, and no other redirect URI', async () => {
    const authorize = (params: Record<string, string>) => {
      const auth = new URL(`${idp.issuer}/protocol/openid-connect/auth`);
      auth.search = new URLSearchParams({
        client_id: 'mileage-docs',
        response_type: 'code',
        redirect_uri: 'http://127.0.0.1:8080/docs/oauth2-redirect.html',
        code_challenge: createHash('sha256').update('v'.repeat(43)).digest('base64url'),
        code_challenge_method: 'S256',
        ...params,
      }).toString();
      return fetch(auth, { redirect: 'manual' });
    };
    const scim = await authorize({ scope: 'users_read scim' });
    assert.equal(new URL(scim.headers.get('location')!).searchParams.get('error'), 'invalid_scope');
    const elsewhere = await authorize({
      scope: 'users_read',
      redirect_uri: 'http://127.0.0.1:9999/docs/oauth2-redirect.html',
    });
    assert.equal(elsewhere.status, 400, 'an unregistered redirect URI is an error page, not a redirect');
    assert.match(await elsewhere.text(), /redirect_uri/);
  });

  test('keys persist across restarts and rotation keeps issued tokens verifiable', async () => {
    const before = (await password('alice@example.com', 'demo', 'users_read')).body.access_token!;
    const oldKid = decodeProtectedHeader(before).kid;
    assert.equal(statSync(idp.keyFile).mode & 0o777, 0o600);
    await idp.close();
    idp = await startIdentityProvider({ port: 0, dataDir, scimClientSecret: 'scim-test-secret' });
    const afterRestart = (await password('alice@example.com', 'demo', 'users_read')).body.access_token!;
    assert.equal(decodeProtectedHeader(afterRestart).kid, oldKid);

    const rotated = await rotateKeys(dataDir);
    assert.notEqual(rotated.signingKid, oldKid);
    assert.deepEqual(rotated.publishedKids.slice(1), [oldKid]);
    await idp.close();
    idp = await startIdentityProvider({ port: 0, dataDir, scimClientSecret: 'scim-test-secret' });
    const fresh = (await password('alice@example.com', 'demo', 'users_read')).body.access_token!;
    assert.equal(decodeProtectedHeader(fresh).kid, rotated.signingKid);
    // A token signed with the previous key still verifies against the new JWKS (issuer differs by port: check the key only).
    const jwks = createRemoteJWKSet(new URL(idp.jwksUri));
    await jwtVerify(afterRestart, jwks, { audience: 'mileage-api' });
  });
});
