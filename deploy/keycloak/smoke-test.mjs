#!/usr/bin/env node
// Checks a running Keycloak realm `mileage` against what the platform expects from its identity provider.
//
//   node smoke-test.mjs [issuer] [--production]
//
//   issuer                        default http://127.0.0.1:8180/realms/mileage
//   --production                  the realm was imported from realm-mileage.json alone: skip what needs the
//                                 development overlay (mileage-dev, the demo users)
//   MILEAGE_SCIM_CLIENT_SECRET    secret of mileage-scim (default scim-dev-secret)
//   MILEAGE_EXAMPLE_REDIRECT_URI  redirect URI used with mileage-example-integration (default http://127.0.0.1:8090/callback)
//   KEYCLOAK_ADMIN_PASSWORD       password of the bootstrap admin `admin` (master realm); when set, the user
//                                 profile and the client policy are also checked through the admin API
//   SMOKE_PRINT_TOKENS=1          print the decoded access tokens
//
// Node 20, no dependencies (global fetch, node:crypto). Every check that fails stops the run with exit code 1.
import assert from 'node:assert/strict';
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';

const args = process.argv.slice(2);
const production = args.includes('--production');
const issuer = (args.find((a) => !a.startsWith('--')) ?? 'http://127.0.0.1:8180/realms/mileage').replace(/\/$/, '');
const scimSecret = process.env.MILEAGE_SCIM_CLIENT_SECRET ?? 'scim-dev-secret';
const redirectUri = process.env.MILEAGE_EXAMPLE_REDIRECT_URI ?? 'http://127.0.0.1:8090/callback';
const adminPassword = process.env.KEYCLOAK_ADMIN_PASSWORD;
const printTokens = process.env.SMOKE_PRINT_TOKENS === '1';
const baseUrl = issuer.replace(/\/realms\/[^/]+$/, '');
const V1_SCOPES = [
  'users_read',
  'drives_read',
  'groups_read',
  'groups_read_reported_drives',
  'webhooks_manage',
  'organization_manage',
];
// The demo users who sign in: Demo Org's four and Globex's two (CONTRACT §6, §7).
const DEMO_USERS = {
  'alice@example.com': 'AliceAdm01',
  'bob@example.com': 'BobDriver1',
  'carol@example.com': 'CarolDrv01',
  'dave@example.com': 'DaveSolo01',
  'erin@globex.example': 'ErinAdmin1',
  'frank@globex.example': 'FrankDrv01',
};

const started = Date.now();
let checks = 0;
async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
  } catch (err) {
    console.error(`not ok ${++checks} - ${name}\n${err instanceof Error ? (err.stack ?? err.message) : err}`);
    process.exit(1);
  }
  console.log(`ok ${++checks} - ${name} (${Date.now() - t0} ms)`);
}

const decode = (part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
const scopesOf = (claims) => (typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean).sort() : []);
const audiences = (claims) => [claims.aud].flat().filter(Boolean);

let discovery;
let jwks;
/** Decodes a JWT and verifies its RS256 signature against the realm's JWKS (as the gateway does). */
function verifiedClaims(jwt) {
  const [h, p, s] = jwt.split('.');
  const header = decode(h);
  assert.equal(header.alg, 'RS256', `token alg ${header.alg}`);
  const jwk = jwks.keys.find((k) => k.kid === header.kid);
  assert.ok(jwk, `the token's kid ${header.kid} is in the JWKS`);
  const key = createPublicKey({ key: jwk, format: 'jwk' });
  assert.ok(
    verify('RSA-SHA256', Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url')),
    'RS256 signature verifies',
  );
  return decode(p);
}
function show(label, claims) {
  if (printTokens) console.log(`# ${label}: ${JSON.stringify(claims)}`);
}

async function token(form, basicAuth) {
  const headers = { 'content-type': 'application/x-www-form-urlencoded' };
  if (basicAuth) headers.authorization = `Basic ${Buffer.from(basicAuth).toString('base64')}`;
  const res = await fetch(discovery.token_endpoint, { method: 'POST', headers, body: new URLSearchParams(form) });
  const body = await res.json().catch(() => ({}));
  return { status: res.status, body };
}
const password = (username, scope, clientId = 'mileage-dev', pw = 'demo') =>
  token({
    grant_type: 'password',
    client_id: clientId,
    username,
    password: pw,
    ...(scope === undefined ? {} : { scope }),
  });
const scimToken = (scope, secret = scimSecret) =>
  token({ grant_type: 'client_credentials', ...(scope === undefined ? {} : { scope }) }, `mileage-scim:${secret}`);

/** A token request that must not yield the scope: refused (invalid_scope), or granted without it. */
function assertNotGranted(result, scope) {
  if (result.status === 200) {
    assert.ok(!scopesOf(verifiedClaims(result.body.access_token)).includes(scope), `${scope} must not be granted`);
  } else {
    assert.equal(result.status, 400, JSON.stringify(result.body));
    assert.equal(result.body.error, 'invalid_scope');
  }
}

// --- a minimal browser for the authorization-code flow (cookies, Keycloak's login and consent forms) ---
function browser() {
  const jar = new Map();
  async function go(url, init = {}) {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(new URL(url, baseUrl), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers ?? {}), ...(cookie ? { cookie } : {}) },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      jar.set(pair.slice(0, i).trim(), pair.slice(i + 1));
    }
    return res;
  }
  const post = (url, fields) =>
    go(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });
  return { go, post };
}
const unescapeHtml = (s) =>
  s
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
function form(html, id) {
  const re = id ? new RegExp(`<form[^>]*id="${id}"[^>]*>([\\s\\S]*?)</form>`) : /<form[^>]*>([\s\S]*?)<\/form>/;
  const m = re.exec(html);
  assert.ok(m, `a form${id ? ` #${id}` : ''} on the page`);
  const action = /action="([^"]+)"/.exec(m[0])?.[1];
  assert.ok(action, 'the form has an action');
  const hidden = {};
  for (const input of m[1].matchAll(/<input[^>]*>/g)) {
    if (!/type="hidden"/.test(input[0])) continue;
    const name = /name="([^"]+)"/.exec(input[0])?.[1];
    if (name) hidden[name] = unescapeHtml(/value="([^"]*)"/.exec(input[0])?.[1] ?? '');
  }
  return { action: unescapeHtml(action), hidden };
}
const pkcePair = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};
const authorizeUrl = (params) =>
  `${discovery.authorization_endpoint}?${new URLSearchParams({ client_id: 'mileage-example-integration', response_type: 'code', redirect_uri: redirectUri, scope: 'openid users_read', state: randomBytes(8).toString('hex'), ...params })}`;

/** Logs in as a demo user through the example integration (PKCE S256, consent) and returns the code. */
async function authorizationCode(b, { challenge, scope, username = 'alice@example.com' }) {
  let res = await b.go(authorizeUrl({ code_challenge: challenge, code_challenge_method: 'S256', scope }));
  for (let step = 0; step < 8; step++) {
    const location = res.headers.get('location');
    if (res.status === 302 && location?.startsWith(redirectUri)) {
      const url = new URL(location);
      assert.equal(url.searchParams.get('error'), null, `authorization error: ${location}`);
      assert.equal(url.searchParams.get('iss'), issuer, 'the authorization response names the issuer (RFC 9207)');
      return url.searchParams.get('code');
    }
    if (res.status === 302) {
      res = await b.go(location);
      continue;
    }
    assert.equal(res.status, 200, `unexpected ${res.status} during login`);
    const html = await res.text();
    if (html.includes('id="kc-form-login"')) {
      const f = form(html, 'kc-form-login');
      res = await b.post(f.action, { ...f.hidden, username, password: 'demo', credentialId: '' });
    } else {
      // The consent page of the integration: its form carries a hidden code; "accept" grants.
      const f = form(html);
      res = await b.post(f.action, { ...f.hidden, accept: 'Yes' });
    }
  }
  assert.fail('no authorization code after 8 steps');
}

// ------------------------------------------------------------------------------------------------------------

await check('discovery document: issuer, endpoints, PKCE S256, RS256', async () => {
  const res = await fetch(`${issuer}/.well-known/openid-configuration`);
  assert.equal(res.status, 200);
  discovery = await res.json();
  assert.equal(discovery.issuer, issuer);
  assert.equal(discovery.jwks_uri, `${issuer}/protocol/openid-connect/certs`);
  assert.equal(discovery.token_endpoint, `${issuer}/protocol/openid-connect/token`);
  assert.ok(discovery.code_challenge_methods_supported.includes('S256'));
  assert.ok(discovery.id_token_signing_alg_values_supported.includes('RS256'));
});

await check('JWKS has an active RS256 signing key (RSA, use sig)', async () => {
  jwks = await (await fetch(discovery.jwks_uri)).json();
  const rs256 = jwks.keys.filter((k) => k.kty === 'RSA' && k.alg === 'RS256' && k.use === 'sig');
  assert.ok(rs256.length >= 1, JSON.stringify(jwks.keys.map(({ kid, kty, alg, use }) => ({ kid, kty, alg, use }))));
  for (const k of rs256) assert.ok(Buffer.from(k.n, 'base64url').length * 8 >= 2048, 'RSA key of at least 2048 bits');
});

if (!production) {
  await check(
    'password grant (mileage-dev) for alice with scope "users_read drives_read": iss, aud, user_id, exact scope',
    async () => {
      const t = await password('alice@example.com', 'users_read drives_read');
      assert.equal(t.status, 200, JSON.stringify(t.body));
      assert.equal(t.body.token_type, 'Bearer');
      const c = verifiedClaims(t.body.access_token);
      show('alice (mileage-dev, users_read drives_read)', c);
      assert.equal(c.iss, issuer);
      assert.ok(audiences(c).includes('mileage-api'), `aud ${JSON.stringify(c.aud)}`);
      assert.equal(c.user_id, 'AliceAdm01');
      assert.equal(c.typ, 'Bearer');
      assert.equal(c.azp, 'mileage-dev');
      assert.ok(typeof c.sub === 'string' && c.sub.length > 0, 'sub');
      // Exactly the scopes asked for: the realm has no profile/email/roles client scopes, so nothing else is added.
      assert.deepEqual(scopesOf(c), ['drives_read', 'users_read'], `scope "${c.scope}"`);
      // Keycloak counts exp from the session's start, which may be in the second before iat.
      assert.ok([299, 300].includes(c.exp - c.iat), `access token lifetime 5 min (${c.exp - c.iat} s)`);
      // expires_in is counted the same way, at a second boundary one less.
      assert.ok([299, 300].includes(t.body.expires_in), `expires_in ${t.body.expires_in}`);
    },
  );

  await check(
    'with "openid" asked for too, the scope claim is the asked scopes plus openid, nothing more',
    async () => {
      const t = await password('alice@example.com', 'openid users_read');
      assert.equal(t.status, 200, JSON.stringify(t.body));
      assert.deepEqual(scopesOf(verifiedClaims(t.body.access_token)), ['openid', 'users_read']);
      assert.equal(verifiedClaims(t.body.id_token).user_id, 'AliceAdm01', 'the ID token carries user_id too');
    },
  );

  await check(
    'a scope not asked for is not in the token (no drives_read without asking; none without scope)',
    async () => {
      const narrow = await password('alice@example.com', 'users_read');
      assert.equal(narrow.status, 200);
      assert.deepEqual(scopesOf(verifiedClaims(narrow.body.access_token)), ['users_read']);
      const none = await password('alice@example.com', undefined);
      assert.equal(none.status, 200);
      const c = verifiedClaims(none.body.access_token);
      assert.deepEqual(scopesOf(c), [], `scope "${c.scope}"`);
      assert.equal(c.user_id, 'AliceAdm01');
    },
  );

  await check('mileage-dev can have all six /v1 scopes, but not scim', async () => {
    const all = await password('alice@example.com', V1_SCOPES.join(' '));
    assert.equal(all.status, 200);
    assert.deepEqual(scopesOf(verifiedClaims(all.body.access_token)), [...V1_SCOPES].sort());
    assertNotGranted(await password('alice@example.com', 'scim'), 'scim');
  });

  await check(
    'client credentials of mileage-scim-globex: org_id "globex" (hardcoded-claim mapper), scope scim only, no user_id',
    async () => {
      const globex = (scope) =>
        token({ grant_type: 'client_credentials', scope }, 'mileage-scim-globex:scim-globex-dev-secret');
      const t = await globex('scim');
      assert.equal(t.status, 200, JSON.stringify(t.body));
      const c = verifiedClaims(t.body.access_token);
      show('mileage-scim-globex (client credentials, scim)', c);
      assert.equal(c.org_id, 'globex');
      assert.equal(c.azp, 'mileage-scim-globex');
      assert.ok(audiences(c).includes('mileage-api'), `aud ${JSON.stringify(c.aud)}`);
      assert.equal(c.user_id, undefined);
      assert.deepEqual(scopesOf(c), ['scim']);
      assertNotGranted(await globex('scim organization_manage'), 'organization_manage');
    },
  );

  await check('every demo user logs in with password "demo" and carries its user_id', async () => {
    for (const [username, userId] of Object.entries(DEMO_USERS)) {
      const t = await password(username, 'users_read');
      assert.equal(t.status, 200, `${username}: ${JSON.stringify(t.body)}`);
      assert.equal(verifiedClaims(t.body.access_token).user_id, userId, username);
    }
    const wrong = await password('alice@example.com', 'users_read', 'mileage-dev', 'wrong');
    assert.ok(wrong.status === 400 || wrong.status === 401, `a wrong password is refused (${wrong.status})`);
    assert.equal(wrong.body.error, 'invalid_grant');
  });
}

await check(
  'client credentials of mileage-scim with scope=scim: scim, no user_id, azp mileage-scim, aud, no refresh token',
  async () => {
    const t = await scimToken('scim');
    assert.equal(t.status, 200, JSON.stringify(t.body));
    assert.equal(t.body.refresh_token, undefined, 'no refresh token for client credentials');
    const c = verifiedClaims(t.body.access_token);
    show('mileage-scim (client credentials, scim)', c);
    assert.equal(c.iss, issuer);
    assert.equal(c.azp, 'mileage-scim');
    assert.ok(audiences(c).includes('mileage-api'), `aud ${JSON.stringify(c.aud)}`);
    assert.equal(c.user_id, undefined, 'no user_id in a client-credentials token');
    assert.equal(c.org_id, undefined, 'no organization claim: the gateway binds mileage-scim by configuration');
    assert.deepEqual(scopesOf(c), ['scim']);
    assert.ok(typeof c.sub === 'string' && c.sub.length > 0, 'sub (the service account)');
    assert.equal(c.typ, 'Bearer');
    assert.ok([299, 300].includes(c.exp - c.iat), `client-credentials token lifetime 5 min (${c.exp - c.iat} s)`);
  },
);

await check('mileage-scim cannot have users_read (or any /v1 scope); without scope= it gets no scope', async () => {
  for (const scope of V1_SCOPES) assertNotGranted(await scimToken(`scim ${scope}`), scope);
  const bare = await scimToken(undefined);
  assert.equal(bare.status, 200);
  assert.deepEqual(scopesOf(verifiedClaims(bare.body.access_token)), []);
});

await check(
  'mileage-scim: wrong secret, the unresolved placeholder as secret, and the password grant are refused',
  async () => {
    const wrong = await scimToken('scim', 'wrong-secret');
    assert.equal(wrong.status, 401, JSON.stringify(wrong.body));
    assert.equal(wrong.body.error, 'unauthorized_client');
    // If MILEAGE_SCIM_CLIENT_SECRET was not set at import, Keycloak keeps the literal placeholder as the secret.
    assert.equal(
      (await scimToken('scim', '${MILEAGE_SCIM_CLIENT_SECRET}')).status,
      401,
      'secret is not the literal placeholder',
    );
    const pw = await token(
      { grant_type: 'password', username: 'alice@example.com', password: 'demo', scope: 'users_read' },
      `mileage-scim:${scimSecret}`,
    );
    assert.notEqual(pw.status, 200, 'no password grant for mileage-scim');
  },
);

await check(
  'mileage-example-integration: an authorization request without PKCE, or with plain, is rejected',
  async () => {
    for (const extra of [{}, { code_challenge: pkcePair().verifier, code_challenge_method: 'plain' }]) {
      const res = await fetch(authorizeUrl(extra), { redirect: 'manual' });
      const location = res.headers.get('location') ?? '';
      // Keycloak answers with a redirect carrying error=invalid_request (the redirect URI is valid).
      assert.equal(res.status, 302, `status ${res.status}`);
      const url = new URL(location);
      assert.ok(location.startsWith(redirectUri), location);
      assert.equal(url.searchParams.get('error'), 'invalid_request', location);
      assert.match(url.searchParams.get('error_description') ?? '', /code.challenge|pkce/i);
    }
  },
);

await check(
  'mileage-example-integration: implicit flow, a foreign redirect URI, localhost and non-https are rejected',
  async () => {
    const { challenge } = pkcePair();
    const s256 = { code_challenge: challenge, code_challenge_method: 'S256' };
    const implicit = await fetch(authorizeUrl({ ...s256, response_type: 'token' }), { redirect: 'manual' });
    assert.ok(
      implicit.status === 400 || /error=/.test(implicit.headers.get('location') ?? ''),
      `implicit ${implicit.status}`,
    );
    for (const uri of [
      'https://evil.example.com/callback',
      'http://localhost:8090/callback',
      'http://integration.example.com/callback',
    ]) {
      const res = await fetch(authorizeUrl({ ...s256, redirect_uri: uri }), { redirect: 'manual' });
      assert.equal(res.status, 400, `${uri}: ${res.status} ${res.headers.get('location')}`);
    }
    const ok = await fetch(authorizeUrl(s256), { redirect: 'manual' });
    assert.equal(ok.status, 200, 'with PKCE S256 the login page is shown');
    assert.match(await ok.text(), /id="kc-form-login"/);
  },
);

// The gateway's /docs page (Swagger UI): MILEAGE_DOCS_CLIENT_ENABLED=false turns the client off in a realm.
if (process.env.MILEAGE_DOCS_CLIENT_ENABLED !== 'false') {
  await check(
    'mileage-docs (the /docs page): PKCE S256 required, its redirect on any loopback port, /v1 scopes and webhooks_manage, never scim',
    async () => {
      const docs = (params) =>
        fetch(
          authorizeUrl({
            client_id: 'mileage-docs',
            redirect_uri: 'http://127.0.0.1:40123/docs/oauth2-redirect.html',
            scope: 'users_read groups_read_reported_drives webhooks_manage',
            ...params,
          }),
          { redirect: 'manual' },
        );
      const s256 = { code_challenge: pkcePair().challenge, code_challenge_method: 'S256' };
      const ok = await docs(s256);
      assert.equal(ok.status, 200, `with PKCE S256 the login page is shown (${ok.headers.get('location')})`);
      assert.match(await ok.text(), /id="kc-form-login"/);
      const noPkce = await docs({});
      assert.equal(new URL(noPkce.headers.get('location')).searchParams.get('error'), 'invalid_request');
      const scim = await docs({ ...s256, scope: 'users_read scim' });
      assert.equal(new URL(scim.headers.get('location')).searchParams.get('error'), 'invalid_scope');
      const elsewhere = await docs({
        ...s256,
        redirect_uri: 'http://integration.example.com/docs/oauth2-redirect.html',
      });
      assert.equal(elsewhere.status, 400, 'another host is not a redirect URI of the page');
    },
  );
}

if (!production) {
  await check(
    'mileage-example-integration: authorization code + PKCE S256 for alice gives a Bearer token the gateway accepts',
    async () => {
      const b = browser();
      const scope = 'openid users_read groups_read';
      const exchange = (code, verifier) =>
        token({
          grant_type: 'authorization_code',
          client_id: 'mileage-example-integration',
          code,
          redirect_uri: redirectUri,
          ...(verifier ? { code_verifier: verifier } : {}),
        });
      // The first round logs in and grants consent; the next ones ride on the SSO session.
      const first = pkcePair();
      const wrong = await exchange(
        await authorizationCode(b, { challenge: first.challenge, scope }),
        pkcePair().verifier,
      );
      assert.equal(wrong.status, 400, 'a wrong code_verifier is refused');
      const second = pkcePair();
      const missing = await exchange(await authorizationCode(b, { challenge: second.challenge, scope }));
      assert.equal(missing.status, 400, 'a token request without code_verifier is refused');
      const third = pkcePair();
      const t = await exchange(await authorizationCode(b, { challenge: third.challenge, scope }), third.verifier);
      assert.equal(t.status, 200, JSON.stringify(t.body));
      assert.equal(t.body.token_type, 'Bearer');
      const c = verifiedClaims(t.body.access_token);
      show('alice (mileage-example-integration, authorization code + PKCE)', c);
      assert.equal(c.typ, 'Bearer', 'not DPoP-bound: the gateway takes Bearer tokens');
      assert.equal(c.cnf, undefined);
      assert.equal(c.azp, 'mileage-example-integration');
      assert.ok(audiences(c).includes('mileage-api'));
      assert.equal(c.user_id, 'AliceAdm01');
      assert.deepEqual(scopesOf(c), ['groups_read', 'openid', 'users_read']);
    },
  );
}

if (adminPassword) {
  const adminToken = async () => {
    const res = await fetch(`${baseUrl}/realms/master/protocol/openid-connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'password',
        client_id: 'admin-cli',
        username: 'admin',
        password: adminPassword,
      }),
    });
    assert.equal(res.status, 200, 'bootstrap admin token');
    return (await res.json()).access_token;
  };
  const admin = async (method, path, body) => {
    const res = await fetch(`${baseUrl}/admin/realms/mileage${path}`, {
      method,
      headers: {
        authorization: `Bearer ${await adminToken()}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, location: res.headers.get('location') };
  };

  await check('admin API: user profile declares user_id (admin-editable only, pattern ^[A-Za-z0-9]{10}$)', async () => {
    const profile = (await admin('GET', '/users/profile')).body;
    const attr = profile.attributes.find((a) => a.name === 'user_id');
    assert.ok(attr, 'user_id in the user profile');
    assert.deepEqual(attr.permissions.edit, ['admin']);
    assert.equal(attr.validations.pattern.pattern, '^[A-Za-z0-9]{10}$');
    assert.equal(profile.unmanagedAttributePolicy, undefined, 'attributes outside the profile are not accepted');
  });

  await check('admin API: a user with an invalid user_id is refused, a valid one is accepted', async () => {
    const base = {
      username: `smoke-${randomBytes(4).toString('hex')}@example.com`,
      email: undefined,
      firstName: 'Smoke',
      lastName: 'Test',
      enabled: true,
    };
    base.email = base.username;
    const bad = await admin('POST', '/users', { ...base, attributes: { user_id: ['short'] } });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    const good = await admin('POST', '/users', { ...base, attributes: { user_id: ['Smoke00001'] } });
    assert.equal(good.status, 201, JSON.stringify(good.body));
    const id = good.location.split('/').pop();
    assert.deepEqual((await admin('GET', `/users/${id}`)).body.attributes.user_id, ['Smoke00001']);
    assert.equal((await admin('DELETE', `/users/${id}`)).status, 204);
  });

  await check(
    'admin API: the OAuth 2.1 policy applies to mileage-example-integration, and saving the client keeps its tokens Bearer',
    async () => {
      const policies = (await admin('GET', '/client-policies/policies')).body.policies;
      const policy = policies.find((p) => p.name === 'oauth-2.1-integrations');
      assert.ok(policy?.enabled, 'policy oauth-2.1-integrations enabled');
      const [client] = (await admin('GET', '/clients?clientId=mileage-example-integration')).body;
      // Saving the client runs the policy's executors (they validate and auto-configure it).
      const saved = await admin('PUT', `/clients/${client.id}`, client);
      assert.equal(saved.status, 204, JSON.stringify(saved.body));
      const after = (await admin('GET', `/clients/${client.id}`)).body;
      assert.equal(after.attributes['pkce.code.challenge.method'], 'S256');
      assert.notEqual(after.attributes['dpop.bound.access.tokens'], 'true', 'no DPoP binding forced on the client');
      assert.equal(after.directAccessGrantsEnabled, false);
      assert.equal(after.implicitFlowEnabled, false);
    },
  );
}

console.log(
  `# realm mileage at ${issuer}: ${checks} checks passed in ${Date.now() - started} ms${production ? ' (production realm: no demo users)' : ''}${adminPassword ? '' : ' (admin API checks skipped: no KEYCLOAK_ADMIN_PASSWORD)'}`,
);
