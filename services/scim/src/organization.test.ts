// The SCIM service acts only inside the organization the gateway attested: every owner call carries it, and a record
// of another organization is answered as nothing even if an owner answered with it (the second wall). Owners faked:
// what is checked is what this service sends and does with their answers.
import { Metadata, status } from '@grpc/grpc-js';
import { METHOD_RULES, type groupsV1, type scimV1, type usersV1 } from '@mileage/proto';
import { attestActor, chain, organizationScope, type CallSettings, type PromiseClient } from '@mileage/runtime/grpc';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { createServer } from './server';

const SECRET = 'organization-test-attestation-secret-0123456789';
const HANDLE_REQUEST = '/mileage.scim.v1.ScimService/HandleRequest';
/** What the gateway's attestation of a request covers. */
type Attested = Parameters<typeof attestActor>[1];
const DEMO = 1;
const GLOBEX = 2;

const user = (id: string, organizationId: number): usersV1.User => ({
  id,
  userName: `${id.toLowerCase()}@example.com`,
  name: { givenName: id, familyName: 'Test' },
  emails: [],
  active: true,
  timezone: 'UTC',
  version: 1,
  organizationId,
  organizationAdmin: false,
});
const USERS = [user('BobDriver1', DEMO), user('GlobexBob1', GLOBEX)];
const GROUP: groupsV1.Group = {
  id: 3,
  displayName: 'Globex Fleet',
  members: [{ userId: 'GlobexBob1', isAdmin: false, isDriver: true }],
  version: 1,
  organizationId: GLOBEX,
};

/** Owners that answer whatever is asked, across organizations (a bug the second wall must absorb), logging calls. */
function leakyOwners() {
  const calls: { method: string; organizationId: number | undefined }[] = [];
  const log = (method: string, call: CallSettings | undefined) =>
    calls.push({ method, organizationId: call?.organizationId });
  const notFound = () => Object.assign(new Error('not found'), { code: status.NOT_FOUND });
  const users = {
    getUser: async ({ id }: usersV1.GetUserRequest, call?: CallSettings) => {
      log('getUser', call);
      const found = USERS.find((u) => u.id === id);
      if (!found) throw notFound();
      return { user: found };
    },
    batchGetUsers: async ({ ids }: usersV1.BatchGetUsersRequest, call?: CallSettings) => {
      log('batchGetUsers', call);
      return { users: USERS.filter((u) => ids.includes(u.id)) };
    },
    listUsers: async (_req: unknown, call?: CallSettings) => {
      log('listUsers', call);
      return { users: [], totalSize: 0 };
    },
    batchFindUsersByUserName: async ({ userNames }: usersV1.BatchFindUsersByUserNameRequest, call?: CallSettings) => {
      log('batchFindUsersByUserName', call);
      return {
        matches: userNames.flatMap((name, index) => {
          const found = USERS.find((u) => u.userName === name.toLowerCase());
          return found ? [{ index, user: found }] : [];
        }),
      };
    },
  } as unknown as PromiseClient<usersV1.UsersServiceClient>;
  const groups = {
    getGroup: async ({ id }: groupsV1.GetGroupRequest, call?: CallSettings) => {
      log('getGroup', call);
      if (id !== GROUP.id) throw notFound();
      return { group: GROUP };
    },
    listGroups: async (_req: unknown, call?: CallSettings) => {
      log('listGroups', call);
      return { groups: [], totalSize: 0 };
    },
    patchGroup: async (_req: unknown, call?: CallSettings) => {
      log('patchGroup', call);
      return { group: GROUP };
    },
  } as unknown as PromiseClient<groupsV1.GroupsServiceClient>;
  return { users, groups, calls };
}

function service() {
  const owners = leakyOwners();
  const { handlers } = createServer({
    users: owners.users,
    groups: owners.groups,
    logger: createLogger({ service: 'scim-test', level: 'silent' }),
    baseUrl: 'https://mileage.test/scim/v2',
    metrics: new Metrics('scim'),
    attestation: { secrets: [SECRET], maxAgeSeconds: 60, replayCacheEntries: 1_000 },
  });
  const handle = handlers.handleRequest as unknown as (
    req: scimV1.HandleRequestRequest,
    ctx: object,
  ) => Promise<scimV1.HandleRequestResponse>;
  const throughOrganization = chain([organizationScope()], async ({ request, metadata, requestId }) =>
    handle(request as scimV1.HandleRequestRequest, {
      metadata,
      requestId,
      remainingMs: () => Infinity,
      signal: new AbortController().signal,
    }),
  );
  const send = async (organizationId: number, method: string, pathAndQuery: string, body?: unknown) => {
    const [path, query = ''] = pathAndQuery.split('?');
    const request = {
      method,
      path: path!,
      query,
      headers: { 'content-type': 'application/scim+json' },
      body: body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body)),
      clientId: 'mileage-scim-globex',
      organizationId,
    };
    const requestId = randomUUID();
    const actorAttestation = attestActor(SECRET, { ...request, actor: request.clientId, requestId });
    // Through the organization interceptor, as the server runs it (its .proto's organization_field).
    const answer = (await throughOrganization({
      path: HANDLE_REQUEST,
      rules: METHOD_RULES[HANDLE_REQUEST]!,
      request: { ...request, actorAttestation },
      metadata: new Metadata(),
      requestId,
      peer: undefined as never,
    })) as scimV1.HandleRequestResponse;
    return { status: answer.status, body: answer.body.length ? JSON.parse(Buffer.from(answer.body).toString()) : {} };
  };
  const handleBatch = handlers.handleRequests as unknown as (
    req: scimV1.HandleRequestsRequest,
    ctx: object,
  ) => Promise<scimV1.HandleRequestsResponse>;
  /** A HandleRequests call of `organizationId`: each read attested as the gateway attests it, unless `attest` says. */
  const sendBatch = async (
    organizationId: number,
    reads: { pathAndQuery: string; requestId?: string; attest?: (covered: Attested) => string; method?: string }[],
  ) => {
    const clientId = 'mileage-scim-globex';
    const requests = reads.map(({ pathAndQuery, requestId = randomUUID(), attest, method = 'GET' }) => {
      const [path, query = ''] = pathAndQuery.split('?');
      const request = { method, path: path!, query, headers: {}, body: Buffer.alloc(0) };
      const covered = { ...request, clientId, organizationId, actor: clientId, requestId };
      return { ...request, requestId, actorAttestation: attest ? attest(covered) : attestActor(SECRET, covered) };
    });
    const ctx = { metadata: new Metadata(), requestId: randomUUID(), remainingMs: () => Infinity };
    const { results } = await handleBatch({ clientId, organizationId, requests }, ctx);
    return results.map(({ result }) =>
      result?.$case === 'response'
        ? { status: result.value.status, body: JSON.parse(Buffer.from(result.value.body).toString()) as unknown }
        : { code: result?.value.code, message: result?.value.message },
    );
  };
  return { send, sendBatch, calls: owners.calls };
}

describe('the SCIM service inside the attested organization', () => {
  test('every owner call carries the organization', async () => {
    const { send, calls } = service();
    await send(GLOBEX, 'GET', '/Users?filter=userName%20eq%20%22bob%40example.com%22');
    await send(GLOBEX, 'GET', '/Users/GlobexBob1');
    await send(GLOBEX, 'GET', '/Groups/3');
    await send(GLOBEX, 'GET', '/Groups');
    await send(GLOBEX, 'POST', '/.search', { filter: 'displayName eq "x"' });
    assert.ok(calls.length >= 6, JSON.stringify(calls));
    assert.deepEqual(
      calls.filter((c) => c.organizationId !== GLOBEX),
      [],
    );
  });

  test("another organization's user or group is a 404 like an unknown id, even when an owner answers with it", async () => {
    const { send } = service();
    const lookup = (name: string) => send(DEMO, 'GET', `/Users?filter=${encodeURIComponent(`userName eq "${name}"`)}`);
    const [own, foreignLookup] = await Promise.all([
      lookup('BobDriver1@example.com'),
      lookup('globexbob1@example.com'),
    ]);
    assert.deepEqual(
      [own, foreignLookup].map((r) => (r.body as { totalResults: number }).totalResults),
      [1, 0],
    );
    const foreign = await send(DEMO, 'GET', '/Users/GlobexBob1');
    const unknown = await send(DEMO, 'GET', '/Users/NoSuchUsr1');
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign, unknown);
    const foreignGroup = await send(DEMO, 'GET', '/Groups/3');
    const unknownGroup = await send(DEMO, 'GET', '/Groups/4');
    assert.equal(foreignGroup.status, 404);
    assert.deepEqual(foreignGroup, unknownGroup);
  });

  test('a member of another organization is the same 400 invalidValue as an unknown member; not shown as a member', async () => {
    const { send } = service();
    const patch = (value: string) =>
      send(GLOBEX, 'PATCH', '/Groups/3', {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'add', path: 'members', value: [{ value }] }],
      });
    const foreign = await patch('BobDriver1');
    const unknown = await patch('NoSuchUsr1');
    assert.equal(foreign.status, 400);
    assert.equal(foreign.body.scimType, 'invalidValue');
    assert.deepEqual(foreign.body, { ...unknown.body, detail: foreign.body.detail });
    assert.equal(foreign.body.detail.replace('BobDriver1', 'X'), unknown.body.detail.replace('NoSuchUsr1', 'X'));
    const shown = await send(GLOBEX, 'GET', '/Groups/3');
    assert.deepEqual(
      shown.body.members.map((m: { value: string }) => m.value),
      ['GlobexBob1'],
    );
  });

  test('a request without an organization is refused before any owner is asked', async () => {
    const { send, calls } = service();
    await assert.rejects(send(0, 'GET', '/Users'), (err: { code?: number }) => {
      assert.equal(err.code, status.FAILED_PRECONDITION);
      return true;
    });
    assert.equal(calls.length, 0);
  });
});

describe('several reads in one HandleRequests call', () => {
  const lookup = (name: string) => `/Users?filter=${encodeURIComponent(`userName eq "${name}"`)}`;

  test('each is answered as its own HandleRequest would be, in order', async () => {
    const { send, sendBatch } = service();
    const paths = [
      lookup('BobDriver1@example.com'),
      '/Users/BobDriver1',
      lookup('nobody@example.com'),
      '/Users/NoSuchUsr1',
    ];
    const alone = await Promise.all(paths.map((p) => send(DEMO, 'GET', p)));
    assert.deepEqual(
      await sendBatch(
        DEMO,
        paths.map((pathAndQuery) => ({ pathAndQuery })),
      ),
      alone,
    );
  });

  test("a read whose attestation does not hold fails alone; the batch's organization is the one attested", async () => {
    const { sendBatch } = service();
    const reused = randomUUID();
    const results = await sendBatch(DEMO, [
      { pathAndQuery: '/Users/BobDriver1' },
      // Attested under another request id than the one it travels with.
      {
        pathAndQuery: '/Users/BobDriver1',
        attest: (r) => attestActor(SECRET, { ...r, requestId: 'other' }),
      },
      // Attested for another organization than the call's.
      {
        pathAndQuery: '/Users/BobDriver1',
        attest: (r) => attestActor(SECRET, { ...r, organizationId: GLOBEX }),
      },
      { pathAndQuery: '/Users/BobDriver1', requestId: reused },
    ]);
    assert.deepEqual(
      results.map((r) => ('status' in r ? r.status : r.code)),
      [200, status.UNAUTHENTICATED, status.UNAUTHENTICATED, 200],
    );
  });

  test('a nonce is taken once, across the reads of a call too', async () => {
    const { sendBatch } = service();
    const requestId = randomUUID();
    let captured = '';
    const results = await sendBatch(DEMO, [
      { pathAndQuery: '/Users/BobDriver1', requestId, attest: (r) => (captured = attestActor(SECRET, r)) },
      // The same request under the same attestation: its MAC holds, its nonce is spent.
      { pathAndQuery: '/Users/BobDriver1', requestId, attest: () => captured },
    ]);
    assert.equal((results[0] as { status: number }).status, 200);
    assert.deepEqual(results[1], {
      code: status.UNAUTHENTICATED,
      message: 'the caller is not attested by the gateway (attestation already used)',
    });
  });

  test('a call that carries anything but GET and HEAD is refused whole, before any request runs', async () => {
    const { sendBatch, calls } = service();
    await assert.rejects(
      sendBatch(DEMO, [
        { pathAndQuery: '/Users/BobDriver1', method: 'HEAD' },
        { pathAndQuery: '/Users/BobDriver1', method: 'DELETE' },
      ]),
      (err: { code?: number; message?: string }) =>
        err.code === status.INVALID_ARGUMENT && /only GET and HEAD/.test(err.message ?? ''),
    );
    assert.deepEqual(calls, [], 'no owner was asked');
  });

  test('more than 64 reads in one call are refused', async () => {
    const { sendBatch } = service();
    await assert.rejects(
      sendBatch(
        DEMO,
        Array.from({ length: 65 }, () => ({ pathAndQuery: '/Users/BobDriver1' })),
      ),
      (err: { code?: number }) => err.code === status.INVALID_ARGUMENT,
    );
  });
});
