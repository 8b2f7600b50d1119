// Isolation between organizations, as a property: for generated probes (a route, an id of the other organization or
// an unknown id of the same shape, a filter), each organization's own credentials — a SCIM secret token, an
// organization-bound client-credentials token, a /v1 user token — get exactly what a nonexistent resource gets
// (status and body, the probed id aside), and no answer names anything of the other organization.
import { groupsV1, usersV1 } from '@mileage/proto';
import { createGrpcClient } from '@mileage/runtime/grpc';
import fc from 'fast-check';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import type { Express } from 'express';
import { startHarness, type Harness } from './harness';

let h: Harness;
let app: Express;

/** What each organization has and how it signs in. */
interface Side {
  organizationId: number;
  userIds: string[];
  userNames: string[];
  externalIds: string[];
  groupIds: number[];
  /** A SCIM secret token, and a client-credentials token bound by its org_id claim. */
  scim: string[];
  /** A /v1 token of an admin of every group of the organization (every scope). */
  v1: string;
}
const side: Record<1 | 2, Side> = {} as never;

const V1_SCOPES = 'users_read drives_read groups_read groups_read_reported_drives webhooks_manage';

async function seedOrganization(organizationId: number, prefix: string, adminId: string): Promise<Side> {
  const users = createGrpcClient(usersV1.UsersServiceClient, h.usersAddress, { defaultDeadlineMs: 5_000 });
  const organizations = createGrpcClient(usersV1.OrganizationsServiceClient, h.usersAddress, {
    defaultDeadlineMs: 5_000,
  });
  const groups = createGrpcClient(groupsV1.GroupsServiceClient, h.groupsAddress, { defaultDeadlineMs: 5_000 });
  const inOrg = { organizationId };
  try {
    const userIds = [adminId, `${prefix}Driver01`.slice(0, 10), `${prefix}Shared01`.slice(0, 10)];
    // The shared one's userName exists in both organizations: each must find only its own.
    const userNames = [`admin@${prefix}.example`, `driver@${prefix}.example`, 'shared@example.com'];
    const externalIds = userIds.map((id) => `ext-${id}`);
    for (const [i, id] of userIds.entries())
      await users.createUser(
        {
          user: {
            id,
            userName: userNames[i]!,
            name: { givenName: prefix, familyName: `User ${i}` },
            emails: [{ value: `${id.toLowerCase()}@${prefix}.example`, type: 'work', primary: true }],
            active: true,
            externalId: externalIds[i]!,
            timezone: 'UTC',
            version: 0,
            organizationId,
            organizationAdmin: false,
          },
        },
        inOrg,
      );
    const members = userIds.map((userId, i) => ({ userId, isAdmin: i === 0, isDriver: i > 0 }));
    const group = (await groups.createGroup({ displayName: `${prefix} Fleet`, members }, inOrg)).group!;
    const secret = (await organizations.createScimToken({ name: 'isolation', actor: 'test', requestId: 'seed' }, inOrg))
      .secret;
    const bound = await h.signWithRealKey({
      scope: 'scim',
      azp: `${prefix}-provisioning`,
      org_id: String(organizationId),
    });
    const v1 = await h.signWithRealKey({ scope: V1_SCOPES, user_id: adminId });
    return { organizationId, userIds, userNames, externalIds, groupIds: [group.id], scim: [secret, bound], v1 };
  } finally {
    users.close();
    organizations.close();
    groups.close();
  }
}

before(async () => {
  h = await startHarness();
  app = h.app({ rateLimitMultiplier: 100_000 });
  const organizations = createGrpcClient(usersV1.OrganizationsServiceClient, h.usersAddress, {
    defaultDeadlineMs: 5_000,
  });
  const [a, b] = await Promise.all(
    ['Isolation A', 'Isolation B'].map(
      async (name, i) =>
        (await organizations.createOrganization({ name, alias: `isolation-${i + 1}` })).organization!.id,
    ),
  );
  organizations.close();
  side[1] = await seedOrganization(a!, 'Aco', 'AcoAdmin01');
  side[2] = await seedOrganization(b!, 'Bco', 'BcoAdmin01');
});
after(() => h.close());

/** Every id, userName and externalId of `s`: none may appear in an answer to the other organization. */
function secretsOf(s: Side): string[] {
  return [...s.userIds, ...s.userNames.filter((n) => n !== 'shared@example.com'), ...s.externalIds];
}

/** An answer with the probed id replaced (where it stands alone), so that "other organization's id" and "unknown id" compare equal. */
function normalised(res: request.Response, probed: string): string {
  const alone = new RegExp(`(?<![0-9A-Za-z])${probed}(?![0-9A-Za-z])`, 'g');
  const body = (res.text ?? '').replace(alone, '<id>');
  const etag = res.headers.etag ? ' etag' : '';
  return `${res.status}${etag} ${body}`;
}

/** No id, userName or externalId of `other` in the answer, but the one the request itself sent (`probed`). */
function assertNothingOf(other: Side, res: request.Response, what: string, probed?: string): void {
  const seen = `${JSON.stringify(res.headers)} ${res.text ?? ''}`;
  for (const secret of secretsOf(other).filter((s) => s !== probed))
    assert.ok(!seen.includes(secret), `${what}: the answer names ${secret} of the other organization: ${seen}`);
}

type Probe = (id: string) => { method: 'get' | 'put' | 'patch' | 'delete' | 'post'; path: string; body?: unknown };
const userProbes: Record<string, Probe> = {
  'GET /Users/{id}': (id) => ({ method: 'get', path: `/scim/v2/Users/${id}` }),
  'PUT /Users/{id}': (id) => ({
    method: 'put',
    path: `/scim/v2/Users/${id}`,
    body: { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'renamed@example.com' },
  }),
  'PATCH /Users/{id}': (id) => ({
    method: 'patch',
    path: `/scim/v2/Users/${id}`,
    body: {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', path: 'active', value: false }],
    },
  }),
  'DELETE /Users/{id}': (id) => ({ method: 'delete', path: `/scim/v2/Users/${id}` }),
  'filter id eq': (id) => ({ method: 'get', path: `/scim/v2/Users?filter=${encodeURIComponent(`id eq "${id}"`)}` }),
  'filter or / not': (id) => ({
    method: 'get',
    path: `/scim/v2/Users?filter=${encodeURIComponent(`(id eq "${id}" or externalId eq "ext-${id}") and not (userName eq "nobody")`)}`,
  }),
  '.search': (id) => ({
    method: 'post',
    path: '/scim/v2/Users/.search',
    body: {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
      filter: `id eq "${id}" or userName pr`,
      startIndex: 1,
      count: 50,
    },
  }),
  'add as a member': (id) => ({
    method: 'patch',
    path: '/scim/v2/Groups/<own-group>',
    body: {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'add', path: 'members', value: [{ value: id }] }],
    },
  }),
};
const groupProbes: Record<string, Probe> = {
  'GET /Groups/{id}': (id) => ({ method: 'get', path: `/scim/v2/Groups/${id}` }),
  'PATCH /Groups/{id}': (id) => ({
    method: 'patch',
    path: `/scim/v2/Groups/${id}`,
    body: {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', path: 'displayName', value: 'Taken over' }],
    },
  }),
  'filter id eq or displayName pr': (id) => ({
    method: 'get',
    path: `/scim/v2/Groups?filter=${encodeURIComponent(`id eq "${id}" or displayName pr`)}`,
  }),
};
const v1GroupProbes: Record<string, Probe> = {
  'GET /v1/groups/{id}': (id) => ({ method: 'get', path: `/v1/groups/${id}` }),
  'GET /v1/groups/{id}/reported-drives': (id) => ({ method: 'get', path: `/v1/groups/${id}/reported-drives` }),
  'GET /v1/groups/{id}/webhooks': (id) => ({ method: 'get', path: `/v1/groups/${id}/webhooks` }),
};
const v1UserProbes: Record<string, Probe> = {
  'GET /v1/users/{id}': (id) => ({ method: 'get', path: `/v1/users/${id}` }),
  'GET /v1/users/{id}/drives': (id) => ({ method: 'get', path: `/v1/users/${id}/drives` }),
};

async function send(probe: ReturnType<Probe>, token: string, own: Side): Promise<request.Response> {
  const path = probe.path.replace('<own-group>', String(own.groupIds[0]));
  let r = request(app)[probe.method](path).set('Authorization', `Bearer ${token}`);
  if (probe.body !== undefined) r = r.set('Content-Type', 'application/scim+json').send(JSON.stringify(probe.body));
  return r;
}

const unknownUserId = fc.stringMatching(/^[A-Za-z0-9]{10}$/).filter((id) => !/^(Aco|Bco|Alice|Bob|Inac)/.test(id));
const unknownGroupId = fc.integer({ min: 1_000_000, max: 2 ** 40 }).map(String);

describe('organizations are isolated', () => {
  test("another organization's user is an unknown user on every SCIM route, to every SCIM credential", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(1 as const, 2 as const),
        fc.constantFrom(0, 1),
        fc.constantFrom(...Object.keys(userProbes)),
        fc.nat(2),
        unknownUserId,
        async (me, credential, probeName, index, unknown) => {
          const own = side[me];
          const other = side[me === 1 ? 2 : 1];
          const token = own.scim[credential]!;
          const probe = userProbes[probeName]!;
          const theirs = await send(probe(other.userIds[index]!), token, own);
          const nobody = await send(probe(unknown), token, own);
          assert.equal(normalised(theirs, other.userIds[index]!), normalised(nobody, unknown), probeName);
          assertNothingOf(other, theirs, probeName, other.userIds[index]!);
        },
      ),
      { numRuns: 120 },
    );
  });

  test("another organization's group is an unknown group to SCIM and to /v1", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(1 as const, 2 as const),
        fc.constantFrom(...Object.keys(groupProbes), ...Object.keys(v1GroupProbes)),
        unknownGroupId,
        async (me, probeName, unknown) => {
          const own = side[me];
          const other = side[me === 1 ? 2 : 1];
          const scimProbe = groupProbes[probeName];
          const probe = scimProbe ?? v1GroupProbes[probeName]!;
          const token = scimProbe ? own.scim[0]! : own.v1;
          const target = String(other.groupIds[0]);
          const theirs = await send(probe(target), token, own);
          const nobody = await send(probe(unknown), token, own);
          assert.equal(normalised(theirs, target), normalised(nobody, unknown), probeName);
          assertNothingOf(other, theirs, probeName);
        },
      ),
      { numRuns: 60 },
    );
  });

  test("another organization's user is any other user on /v1", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(1 as const, 2 as const),
        fc.constantFrom(...Object.keys(v1UserProbes)),
        fc.nat(2),
        unknownUserId,
        async (me, probeName, index, unknown) => {
          const own = side[me];
          const other = side[me === 1 ? 2 : 1];
          const probe = v1UserProbes[probeName]!;
          const theirs = await send(probe(other.userIds[index]!), own.v1, own);
          const nobody = await send(probe(unknown), own.v1, own);
          assert.equal(normalised(theirs, other.userIds[index]!), normalised(nobody, unknown), probeName);
          assertNothingOf(other, theirs, probeName, other.userIds[index]!);
        },
      ),
      { numRuns: 40 },
    );
  });

  test('lists, counts and filters of every shape hold only one organization', async () => {
    const filters = fc.oneof(
      fc.constantFrom(
        'userName pr',
        'not (userName eq "nobody")',
        'userName sw "a" or userName sw "d"',
        'active eq true',
      ),
      fc.constantFrom(...side[1].userNames, ...side[2].userNames).map((n) => `userName eq "${n}"`),
      fc.constantFrom(...side[1].externalIds, ...side[2].externalIds).map((e) => `externalId eq "${e}"`),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(1 as const, 2 as const),
        fc.constantFrom(0, 1),
        filters,
        fc.integer({ min: 1, max: 20 }),
        async (me, credential, filter, startIndex) => {
          const own = side[me];
          const other = side[me === 1 ? 2 : 1];
          const res = await request(app)
            .get(`/scim/v2/Users?filter=${encodeURIComponent(filter)}&startIndex=${startIndex}&count=100`)
            .set('Authorization', `Bearer ${own.scim[credential]!}`);
          assert.equal(res.status, 200, res.text);
          assertNothingOf(other, res, filter);
          const ids = (res.body.Resources as { id: string }[]).map((r) => r.id);
          assert.ok(
            ids.every((id) => own.userIds.includes(id)),
            `${filter}: ${ids.join(', ')}`,
          );
          assert.ok(res.body.totalResults <= own.userIds.length, `${filter}: totalResults ${res.body.totalResults}`);
        },
      ),
      { numRuns: 80 },
    );
  });

  test("a 409 names only one's own users: a userName of the other organization can be created again", async () => {
    for (const me of [1, 2] as const) {
      const own = side[me];
      const other = side[me === 1 ? 2 : 1];
      const res = await request(app)
        .post('/scim/v2/Users')
        .set('Authorization', `Bearer ${own.scim[0]!}`)
        .set('Content-Type', 'application/scim+json')
        .send(
          JSON.stringify({
            schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
            userName: other.userNames[1],
            externalId: other.externalIds[1],
          }),
        );
      assert.equal(res.status, 201, res.text);
      assert.ok(!other.userIds.includes(res.body.id));
      const again = await request(app)
        .post('/scim/v2/Users')
        .set('Authorization', `Bearer ${own.scim[0]!}`)
        .set('Content-Type', 'application/scim+json')
        .send(
          JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: other.userNames[1] }),
        );
      assert.equal(again.status, 409);
      assertNothingOf(other, again, '409');
    }
  });
});
