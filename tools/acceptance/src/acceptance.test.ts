// Acceptance tests: what a client of the platform sees over HTTP, with real tokens from the realm `mileage`.
// Without ACCEPTANCE_GATEWAY_URL they start the whole stack as `npm start` does (fresh data folder, free ports,
// development identity provider). With it, they run against that stack and ACCEPTANCE_ISSUER — the Keycloak run
// (`npm run test:keycloak`) uses this to prove that the same tests pass with real Keycloak.
import { launchStack, type LaunchedStack } from '@mileage/devstack';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

const PASSWORD = process.env.ACCEPTANCE_DEMO_PASSWORD ?? 'demo';
const SCIM_SECRET = process.env.ACCEPTANCE_SCIM_CLIENT_SECRET ?? 'scim-dev-secret';
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

async function scimToken(): Promise<string> {
  const t = await token({ grant_type: 'client_credentials', scope: 'scim' }, `mileage-scim:${SCIM_SECRET}`);
  assert.equal(t.status, 200, 'client credentials of mileage-scim');
  return t.accessToken!;
}

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
