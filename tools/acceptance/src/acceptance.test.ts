// Acceptance tests: what a client of the platform sees over HTTP, with real tokens from the realm `mileage`.
// Without ACCEPTANCE_GATEWAY_URL they start the whole stack as `npm start` does (fresh data folder, free ports,
// development identity provider). With it, they run against that stack and ACCEPTANCE_ISSUER — the Keycloak run
// (`npm run test:keycloak`) uses this to prove that the same tests pass with real Keycloak.
import { launchStack, type LaunchedStack } from '@mileage/devstack';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

const PASSWORD = process.env.ACCEPTANCE_DEMO_PASSWORD ?? 'demo';
const SCIM_SECRET = process.env.ACCEPTANCE_SCIM_CLIENT_SECRET ?? 'scim-dev-secret';
const GLOBEX_SCIM_SECRET = process.env.ACCEPTANCE_SCIM_GLOBEX_CLIENT_SECRET ?? 'scim-globex-dev-secret';
const V1_SCOPES = 'users_read drives_read groups_read groups_read_reported_drives';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';

let gateway: string;
let issuer: string;
let stack: LaunchedStack | undefined;

before(async () => {
  if (process.env.ACCEPTANCE_GATEWAY_URL) {
    gateway = process.env.ACCEPTANCE_GATEWAY_URL.replace(/\/$/, '');
    issuer = (process.env.ACCEPTANCE_ISSUER ?? 'http://127.0.0.1:8081/realms/mileage').replace(/\/$/, '');
    return;
  }
  stack = await launchStack();
  gateway = stack.gatewayUrl;
  issuer = stack.issuer;
});

after(() => stack?.stop());

async function token(form: Record<string, string>, basic?: string): Promise<{ status: number; accessToken?: string }> {
  const res = await fetch(`${issuer}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(basic ? { authorization: `Basic ${Buffer.from(basic).toString('base64')}` } : {}),
    },
    body: new URLSearchParams(form),
  });
  const body = (await res.json()) as { access_token?: string };
  return { status: res.status, ...(body.access_token ? { accessToken: body.access_token } : {}) };
}

async function userToken(username: string, scope = V1_SCOPES): Promise<string> {
  const t = await token({ grant_type: 'password', client_id: 'mileage-dev', username, password: PASSWORD, scope });
  assert.equal(t.status, 200, `password grant for ${username}`);
  return t.accessToken!;
}

async function scimToken(client = 'mileage-scim', secret = SCIM_SECRET): Promise<string> {
  const t = await token({ grant_type: 'client_credentials', scope: 'scim' }, `${client}:${secret}`);
  assert.equal(t.status, 200, `client credentials of ${client}`);
  return t.accessToken!;
}

/** A JWT's claims, unverified: what the identity provider put in it (the gateway verifies it). */
const claimsOf = (jwt: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;

// The tests read arbitrary JSON bodies and assert on their fields.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function get(pathAndQuery: string, bearer?: string): Promise<{ status: number; headers: Headers; body: Json }> {
  const res = await fetch(`${gateway}${pathAndQuery}`, {
    headers: bearer ? { authorization: `Bearer ${bearer}` } : {},
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

async function scim(
  method: string,
  pathAndQuery: string,
  bearer: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${gateway}/scim/v2${pathAndQuery}`, {
    method,
    headers: {
      authorization: `Bearer ${bearer}`,
      ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('acceptance: the External API with real tokens', () => {
  test('Alice reads her profile, the group she administers and its reported drives, page by page', async () => {
    const alice = await userToken('alice@example.com');
    const me = await get('/v1/users/me', alice);
    assert.equal(me.status, 200);
    assert.equal(me.body.id, 'AliceAdm01');
    assert.equal(me.body.userName, 'alice@example.com');
    const groups = await get('/v1/groups', alice);
    assert.equal(groups.status, 200);
    assert.deepEqual(
      groups.body.resources.map((g: { id: string }) => g.id),
      ['1'],
    );
    const first = await get('/v1/groups/1/reported-drives?limit=10', alice);
    assert.equal(first.status, 200);
    assert.equal(first.body.results.length, 10);
    assert.equal(first.body.has_more, true);
    const second = await get(
      `/v1/groups/1/reported-drives?limit=10&cursor=${encodeURIComponent(first.body.next_cursor)}`,
      alice,
    );
    assert.equal(second.status, 200);
    const ids = [...first.body.results, ...second.body.results].map((r: { id: string }) => r.id);
    assert.equal(new Set(ids).size, 20, 'no drive is repeated across pages');
    assert.equal((await get('/v1/groups/2', alice)).status, 403, 'not an admin of group 2');
  });

  test('ownership, scopes and tokens are enforced', async () => {
    const bob = await userToken('bob@example.com');
    assert.equal((await get('/v1/users/BobDriver1/drives?limit=5', bob)).status, 200);
    assert.equal((await get('/v1/users/AliceAdm01', bob)).status, 403);
    const narrow = await userToken('bob@example.com', 'users_read');
    const refused = await get('/v1/groups', narrow);
    assert.equal(refused.status, 403);
    assert.match(refused.headers.get('www-authenticate') ?? '', /insufficient_scope/);
    assert.equal((await get('/v1/users/me', narrow)).status, 200);
    assert.equal((await get('/v1/users/me')).status, 401);
    assert.equal(
      (await get('/v1/users/me', `${narrow.slice(0, -4)}AAAA`)).status,
      401,
      'a token whose signature does not verify',
    );
    const wrongPassword = await token({
      grant_type: 'password',
      client_id: 'mileage-dev',
      username: 'alice@example.com',
      password: 'wrong',
      scope: 'users_read',
    });
    assert.ok(
      wrongPassword.status === 400 || wrongPassword.status === 401,
      `a wrong password is refused (${wrongPassword.status})`,
    );
    assert.equal(wrongPassword.accessToken, undefined);
  });
});

describe('acceptance: provisioning with real tokens', () => {
  test('a provisioned user joins a team, is seen by its admin, is deactivated and deleted; the SCIM token is no /v1 token', async () => {
    const provisioning = await scimToken();
    assert.equal(
      (await get('/v1/users/me', provisioning)).status,
      403,
      'a client-credentials token names no platform user',
    );
    const dave = await userToken('dave@example.com');
    const userName = `acceptance.${Date.now()}@example.com`;
    const created = await scim('POST', '/Users', provisioning, {
      schemas: [CORE_USER],
      userName,
      name: { givenName: 'Accept', familyName: 'Ance' },
    });
    assert.equal(created.status, 201);
    const id = created.body.id as string;
    assert.equal(
      (
        await scim('PATCH', '/Groups/2', provisioning, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'add', path: 'members', value: [{ value: id }] }],
        })
      ).status,
      200,
    );
    const members = async () =>
      (await get('/v1/groups/2', dave)).body.resources[0].members as {
        value: string;
        is_admin: boolean;
        is_driver: boolean;
      }[];
    const joined = (await members()).find((m) => m.value === id);
    assert.deepEqual([joined?.is_admin, joined?.is_driver], [false, true]);
    assert.equal(
      (
        await scim('PATCH', `/Users/${id}`, provisioning, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'replace', path: 'active', value: false }],
        })
      ).body.active,
      false,
    );
    assert.equal(
      (
        await scim('PATCH', '/Groups/2', provisioning, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'remove', path: `members[value eq "${id}"]` }],
        })
      ).status,
      200,
    );
    assert.equal(
      (await members()).find((m) => m.value === id),
      undefined,
    );
    assert.equal((await scim('DELETE', `/Users/${id}`, provisioning)).status, 204);
    assert.equal((await scim('GET', `/Users/${id}`, provisioning)).status, 404);
    assert.ok(
      (await members()).some((m) => m.value === 'DaveSolo01' && m.is_admin),
      'Dave stays the admin of group 2',
    );
  });

  test('deactivating a demo user refuses their next /v1 request; reactivating lets them in', async () => {
    const provisioning = await scimToken();
    const carol = await userToken('carol@example.com', 'users_read');
    assert.equal((await get('/v1/users/me', carol)).status, 200);
    assert.equal(
      (
        await scim('PATCH', '/Users/CarolDrv01', provisioning, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
        })
      ).status,
      200,
    );
    try {
      assert.equal((await get('/v1/users/me', carol)).status, 403);
    } finally {
      assert.equal(
        (
          await scim('PATCH', '/Users/CarolDrv01', provisioning, {
            schemas: [PATCH_OP],
            Operations: [{ op: 'replace', value: { active: true } }],
          })
        ).status,
        200,
      );
    }
    assert.equal((await get('/v1/users/me', carol)).status, 200);
  });
});

describe('acceptance: organizations (CONTRACT §7)', () => {
  test('a mileage-scim-globex token names its organization by the claim org_id; a mileage-scim token names none', async () => {
    const globex = claimsOf(await scimToken('mileage-scim-globex', GLOBEX_SCIM_SECRET));
    assert.equal(globex.org_id, 'globex');
    assert.equal(globex.azp, 'mileage-scim-globex');
    assert.equal(globex.user_id, undefined);
    const demo = claimsOf(await scimToken());
    assert.equal(demo.org_id, undefined, 'the gateway binds mileage-scim to Demo Org by SCIM_CLIENT_ORGANIZATIONS');
    assert.equal(demo.organization, undefined);
  });

  test('each provisioning client lists only its own organization; the same userName in both is two people', async () => {
    const ids = async (bearer: string, query = '') => {
      const res = await scim('GET', `/Users${query}`, bearer);
      assert.equal(res.status, 200);
      return (res.body.Resources as { id: string }[]).map((r) => r.id).sort();
    };
    const globex = await scimToken('mileage-scim-globex', GLOBEX_SCIM_SECRET);
    const demo = await scimToken();
    assert.deepEqual(await ids(globex), ['ErinAdmin1', 'FrankDrv01', 'GlobexBob1']);
    const bob = `?filter=${encodeURIComponent('userName eq "bob@example.com"')}`;
    assert.deepEqual(await ids(globex, bob), ['GlobexBob1']);
    assert.deepEqual(await ids(demo, bob), ['BobDriver1']);
    assert.ok(!(await ids(demo)).some((id) => ['ErinAdmin1', 'FrankDrv01', 'GlobexBob1'].includes(id)));
    assert.equal((await scim('GET', '/Users/BobDriver1', globex)).status, 404, "another organization's user");
    assert.equal((await scim('GET', '/Groups/1', globex)).status, 404, "another organization's group");
  });

  test("an organization admin's secret token provisions as the organization until it is revoked", async () => {
    const erin = await userToken('erin@globex.example', 'organization_manage');
    const manage = async (method: string, route: string, body?: unknown) => {
      const res = await fetch(`${gateway}/v1/organization/scim-tokens${route}`, {
        method,
        headers: { authorization: `Bearer ${erin}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as Json) : undefined };
    };
    const created = await manage('POST', '', { name: 'acceptance' });
    assert.equal(created.status, 201);
    const { id, token: secret } = created.body as { id: string; token: string };
    assert.match(secret, /^mscim_[A-Za-z0-9_-]{43}$/);
    const listed = await manage('GET', '');
    assert.ok((listed.body.results as { id: string; token?: string }[]).some((t) => t.id === id && !t.token));
    const users = await scim('GET', '/Users', secret);
    assert.equal(users.status, 200);
    assert.deepEqual((users.body.Resources as { id: string }[]).map((r) => r.id).sort(), [
      'ErinAdmin1',
      'FrankDrv01',
      'GlobexBob1',
    ]);
    const bob = await userToken('bob@example.com', 'organization_manage');
    const notAdmin = await fetch(`${gateway}/v1/organization/scim-tokens`, {
      headers: { authorization: `Bearer ${bob}` },
    });
    assert.equal(notAdmin.status, 403, 'not an organization admin');
    assert.equal((await manage('DELETE', `/${id}`)).status, 204);
    // Refused on the very next request (CONTRACT §7), though the gateway had it cached.
    assert.equal((await scim('GET', '/Users', secret)).status, 401, 'a revoked secret token');
  });
});
