import {
  credentials as grpcCredentials,
  Server as GrpcServer,
  ServerCredentials,
  status as grpcStatus,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServiceError,
} from '@grpc/grpc-js';
import { PROTO_FILES, scimV1 } from '@mileage/proto';
import {
  ACTOR_NOT_ATTESTED,
  AppError,
  createGrpcClient,
  decodeServiceError,
  startGrpcServer,
  type Handlers,
  type ServiceRegistration,
} from '@mileage/runtime/grpc';
import { createLogger, Metrics } from '@mileage/runtime/telemetry';
import type { Express } from 'express';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { ACTOR_ATTESTATION_PREVIOUS_SECRET, SCIM_URN, scimSuite } from './harness';

const { CORE_USER, ENTERPRISE, CORE_GROUP, PATCH_OP, ERROR } = SCIM_URN;
const suite = scimSuite();

function scim(
  method: 'get' | 'post' | 'put' | 'patch' | 'delete',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  let r = request(suite.app)[method](`/scim/v2${path}`).set('Authorization', `Bearer ${suite.token}`);
  for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
  if (body !== undefined)
    r = r
      .set('Content-Type', headers['Content-Type'] ?? 'application/scim+json')
      .send(typeof body === 'string' ? body : JSON.stringify(body));
  return r;
}

function assertScimError(res: request.Response, status: number, scimType?: string) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.match(res.headers['content-type']!, /^application\/scim\+json/);
  assert.deepEqual(res.body.schemas, [ERROR]);
  assert.equal(res.body.status, String(status));
  if (scimType) assert.equal(res.body.scimType, scimType);
  assert.equal(typeof res.body.detail, 'string');
  assert.doesNotMatch(JSON.stringify(res.body), /at .*\.js|SELECT|INSERT|grpc/i);
}

/** The provisioning audit of a user (kept by Users) or a group (kept by Groups), oldest first. */
async function auditOf(resourceId: string) {
  return /^\d+$/.test(resourceId)
    ? suite.h.groupsDb
        .knex('provisioning_audit')
        .where({ team_id: Number(resourceId) })
        .orderBy('id')
    : suite.h.usersDb.knex('provisioning_audit').where({ user_id: resourceId }).orderBy('id');
}

/** How many provisioning audit entries exist, users' and groups' together. */
async function auditCount(): Promise<number> {
  const count = async (db: typeof suite.h.usersDb) =>
    Number((await db.knex('provisioning_audit').count<{ count: string }[]>('* as count'))[0]!.count);
  return (await count(suite.h.usersDb)) + (await count(suite.h.groupsDb));
}

const unique = () => Math.random().toString(36).slice(2, 10);

describe('SCIM: authentication, limits and discovery', () => {
  test('no token is 401, a /v1 token without the scim scope is 403, both as SCIM errors', async () => {
    const anonymous = await request(suite.app).get('/scim/v2/Users');
    assertScimError(anonymous, 401);
    assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="mileage"');
    const v1 = await suite.h.token('alice@example.com', 'users_read');
    const wrongScope = await request(suite.app).get('/scim/v2/Users').set('Authorization', `Bearer ${v1}`);
    assertScimError(wrongScope, 403);
    assert.match(wrongScope.headers['www-authenticate']!, /insufficient_scope/);
  });

  test('the limit is per organization per minute, answered as a SCIM 429 with Retry-After', async () => {
    // 1,200 per minute scaled down to 6 for the test.
    const limited = suite.h.app({ rateLimitMultiplier: 6 / 1200 });
    for (let i = 0; i < 6; i++) {
      const ok = await request(limited)
        .get('/scim/v2/ServiceProviderConfig')
        .set('Authorization', `Bearer ${suite.token}`)
        .expect(200);
      assert.equal(ok.headers['x-ratelimit-limit'], '6');
    }
    const refused = await request(limited).get('/scim/v2/Users').set('Authorization', `Bearer ${suite.token}`);
    assertScimError(refused, 429);
    assert.ok(Number(refused.headers['retry-after']) > 0);
  });

  test('bodies over 1 MB are 413; other content types 415; malformed JSON 400 invalidSyntax', async () => {
    const big = JSON.stringify({
      schemas: [CORE_USER],
      userName: 'big@example.com',
      displayName: 'x'.repeat(1_100_000),
    });
    assertScimError(await scim('post', '/Users', big), 413);
    assertScimError(
      await scim('post', '/Users', 'userName=x', { 'Content-Type': 'application/x-www-form-urlencoded' }),
      415,
    );
    assertScimError(await scim('post', '/Users', '{"userName": '), 400, 'invalidSyntax');
    assertScimError(await scim('post', '/Users', '[1,2]'), 400, 'invalidSyntax');
    const asJson = await scim(
      'post',
      '/Users',
      { userName: `plain-json-${unique()}@example.com` },
      { 'Content-Type': 'application/json' },
    );
    assert.equal(asJson.status, 201, 'application/json is accepted too');
  });

  test('a method a path does not have is 405 with an Allow that lists only that path’s methods', async () => {
    // schemathesis found the item and .search paths advertising every method of the endpoint.
    const allowOf = async (method: 'options' | 'get' | 'put' | 'post', path: string) => {
      const res = await request(suite.app)[method](`/scim/v2${path}`).set('Authorization', `Bearer ${suite.token}`);
      assertScimError(res, 405);
      return res.headers.allow;
    };
    assert.equal(await allowOf('options', '/Users/.search'), 'POST');
    assert.equal(await allowOf('get', '/Groups/.search'), 'POST');
    assert.equal(await allowOf('options', '/Users/someone'), 'GET, PUT, PATCH, DELETE');
    assert.equal(await allowOf('post', '/Users/someone'), 'GET, PUT, PATCH, DELETE');
    assert.equal(await allowOf('options', `/Groups/${suite.h.groups.demo}`), 'GET, PUT, PATCH, DELETE');
    assert.equal(await allowOf('put', '/Users'), 'GET, POST');
    assert.equal(await allowOf('get', '/.search'), 'POST');
  });

  test('ServiceProviderConfig, ResourceTypes and Schemas describe what is supported', async () => {
    const config = await scim('get', '/ServiceProviderConfig').expect(200);
    assert.match(config.headers['content-type']!, /^application\/scim\+json/);
    assert.deepEqual(
      [
        config.body.patch.supported,
        config.body.bulk.supported,
        config.body.filter.supported,
        config.body.filter.maxResults,
        config.body.etag.supported,
        config.body.sort.supported,
      ],
      [true, false, true, 500, true, false],
    );
    assert.equal(config.body.authenticationSchemes[0].type, 'oauthbearertoken');
    const types = await scim('get', '/ResourceTypes').expect(200);
    assert.deepEqual(
      types.body.Resources.map((r: { id: string }) => r.id),
      ['User', 'Group'],
    );
    assert.deepEqual(types.body.Resources[0].schemaExtensions, [{ schema: ENTERPRISE, required: false }]);
    await scim('get', '/ResourceTypes/Group').expect(200);
    const schemas = await scim('get', '/Schemas').expect(200);
    assert.deepEqual(
      schemas.body.Resources.map((s: { id: string }) => s.id),
      [CORE_USER, ENTERPRISE, CORE_GROUP],
    );
    const user = await scim('get', `/Schemas/${CORE_USER}`).expect(200);
    const userName = user.body.attributes.find((a: { name: string }) => a.name === 'userName');
    assert.deepEqual([userName.required, userName.uniqueness, userName.caseExact], [true, 'server', false]);
    assertScimError(await scim('get', '/Schemas/urn:nope'), 404);
    assertScimError(await scim('post', '/Bulk', { Operations: [] }), 501);
  });
});

describe('SCIM Users', () => {
  test('POST creates (201, Location, ETag), keeps the enterprise extension, never stores the password', async () => {
    const userName = `Pat.${unique()}@Example.com`;
    const res = await scim('post', '/Users', {
      schemas: [CORE_USER, ENTERPRISE],
      userName,
      password: 'S3cret!',
      name: { givenName: 'Pat', familyName: 'Lee', middleName: 'Q' },
      emails: [{ value: userName, type: 'work', primary: true }],
      title: 'Courier',
      phoneNumbers: [{ value: '+1 555 0100', type: 'mobile' }],
      [ENTERPRISE]: { employeeNumber: '4711', department: 'Logistics', manager: { value: 'AliceAdm01' } },
    }).expect(201);
    const id = res.body.id;
    assert.match(id, /^[A-Za-z0-9]{10}$/);
    assert.equal(res.headers.location, `http://127.0.0.1:8080/scim/v2/Users/${id}`);
    assert.equal(res.headers.etag, 'W/"1"');
    assert.deepEqual(res.body.schemas, [CORE_USER, ENTERPRISE]);
    assert.equal(res.body.userName, userName);
    assert.equal(res.body.active, true);
    assert.deepEqual(res.body.name, { middleName: 'Q', familyName: 'Lee', givenName: 'Pat' });
    assert.equal(res.body.title, 'Courier');
    assert.deepEqual(res.body[ENTERPRISE], {
      employeeNumber: '4711',
      department: 'Logistics',
      manager: { value: 'AliceAdm01' },
    });
    assert.deepEqual(res.body.meta, {
      resourceType: 'User',
      created: res.body.meta.created,
      lastModified: res.body.meta.lastModified,
      location: res.headers.location,
      version: 'W/"1"',
    });
    assert.equal(res.body.password, undefined);
    const read = await scim('get', `/Users/${id}`).expect(200);
    assert.deepEqual(read.body, res.body);
    assert.doesNotMatch(JSON.stringify(await auditOf(id)), /S3cret/);
  });

  test('a sent id is ignored (readOnly): the server issues one; a taken userName is 409 uniqueness', async () => {
    const userName = `sent.${unique()}@example.com`;
    for (const id of ['SentFree01', 'AliceAdm01', 'not valid!', 42]) {
      const created = await scim('post', '/Users', { schemas: [CORE_USER], id, userName: `${unique()}.${userName}` });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.match(created.body.id, /^[A-Za-z0-9]{10}$/);
      assert.notEqual(created.body.id, id);
    }
    await scim('post', '/Users', { schemas: [CORE_USER], userName }).expect(201);
    assertScimError(
      await scim('post', '/Users', { schemas: [CORE_USER], userName: userName.toUpperCase() }),
      409,
      'uniqueness',
    );
  });

  test('many concurrent creates of one userName: exactly one wins, the others are 409, one audit entry', async () => {
    const userName = `race.${unique()}@example.com`;
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        scim('post', '/Users', { schemas: [CORE_USER], userName: i % 2 ? userName : userName.toUpperCase() }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [201, ...Array(15).fill(409)]);
    const winner = results.find((r) => r.status === 201)!.body.id;
    assert.equal((await auditOf(winner)).length, 1);
  });

  test('bad input gets the right scimType and writes nothing', async () => {
    const before = await auditCount();
    assertScimError(await scim('post', '/Users', { schemas: [CORE_USER] }), 400, 'invalidValue');
    assertScimError(await scim('post', '/Users', { userName: 42 }), 400, 'invalidValue');
    assertScimError(
      await scim('post', '/Users', { userName: `t.${unique()}@example.com`, active: 'maybe' }),
      400,
      'invalidValue',
    );
    assertScimError(
      await scim('post', '/Users', { userName: `t.${unique()}@example.com`, favouriteColour: 'blue' }),
      400,
      'invalidSyntax',
    );
    assertScimError(
      await scim('post', '/Users', { userName: `t.${unique()}@example.com`, emails: [{ value: 'not an address' }] }),
      400,
      'invalidValue',
    );
    assertScimError(
      await scim('post', '/Users', { userName: `t.${unique()}@example.com`, timezone: 'Mars/Olympus' }),
      400,
      'invalidValue',
    );
    assertScimError(
      await scim('post', '/Users', { userName: `t.${unique()}@example.com`, 'urn:example:custom:2.0:User': { x: 1 } }),
      400,
      'invalidSyntax',
    );
    assert.equal(await auditCount(), before);
  });

  test('one rule per attribute: too many e-mails (or two primaries) is the same 400 through POST, PUT and PATCH', async () => {
    const userName = `rules.${unique()}@example.com`;
    const created = await scim('post', '/Users', { schemas: [CORE_USER], userName }).expect(201);
    const id = created.body.id as string;
    const emails = Array.from({ length: 11 }, (_, i) => ({ value: `e${i}.${userName}`, type: 'work' }));
    const twoPrimaries = emails.slice(0, 2).map((e) => ({ ...e, primary: true }));
    for (const [value, detail] of [
      [emails, 'Invalid value (emails: at most 10 values)'],
      [twoPrimaries, 'Invalid value (emails: at most one primary value)'],
    ] as const) {
      const answers = [
        await scim('post', '/Users', { schemas: [CORE_USER], userName: `other.${userName}`, emails: value }),
        await scim('put', `/Users/${id}`, { schemas: [CORE_USER], userName, emails: value }),
        await scim('patch', `/Users/${id}`, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'add', path: 'emails', value }],
        }),
      ];
      for (const res of answers) {
        assertScimError(res, 400, 'invalidValue');
        assert.equal(res.body.detail, detail);
      }
    }
    // A PATCH adding one new primary next to an existing one demotes the old one (RFC 7644 §3.5.2).
    await scim('put', `/Users/${id}`, { userName, emails: [{ value: `a.${userName}`, primary: true }] }).expect(200);
    const patched = await scim('patch', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'emails', value: [{ value: `b.${userName}`, primary: true }] }],
    }).expect(200);
    assert.deepEqual(
      patched.body.emails.map((e: { primary: boolean }) => e.primary),
      [false, true],
    );
  });

  describe('GET /Users with filters', () => {
    const tag = unique();
    const ids: Record<string, string> = {};
    before(async () => {
      for (const [key, body] of Object.entries({
        quinn: {
          userName: `Quinn.${tag}@example.com`,
          externalId: `ext-${tag}-q`,
          name: { givenName: 'Quinn', familyName: 'Zed' },
          emails: [{ value: `quinn.${tag}@work.example`, type: 'work', primary: true }],
          [ENTERPRISE]: { department: 'Sales' },
        },
        rae: {
          userName: `rae.${tag}@example.com`,
          externalId: `ext-${tag}-r`,
          name: { givenName: 'Rae', familyName: 'Zed' },
          active: false,
          emails: [{ value: `rae.${tag}@home.example`, type: 'home' }],
        },
        sam: { userName: `sam.${tag}@example.org`, externalId: `ext-${tag}-s`, displayName: `Sam ${tag}` },
      })) {
        ids[key] = (await scim('post', '/Users', { schemas: [CORE_USER], ...body }).expect(201)).body.id;
      }
    });
    const find = async (filter: string, extra = '') => {
      const res = await scim(
        'get',
        `/Users?filter=${encodeURIComponent(`(${filter}) and externalId sw "ext-${tag}"`)}${extra}`,
      ).expect(200);
      return (res.body.Resources as { id: string }[])
        .map((r) => Object.entries(ids).find(([, id]) => id === r.id)?.[0])
        .sort();
    };

    test('userName eq matches case-insensitively; attribute names and operators in any case', async () => {
      assert.deepEqual(await find(`UserName EQ "QUINN.${tag}@EXAMPLE.COM"`), ['quinn']);
      assert.deepEqual(await find(`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "rae.${tag}@example.com"`), [
        'rae',
      ]);
    });

    test('every operator, and / or / not, grouping and value paths', async () => {
      assert.deepEqual(await find(`userName co "${tag}@example.c"`), ['quinn', 'rae']);
      assert.deepEqual(await find(`userName sw "sam."`), ['sam']);
      assert.deepEqual(await find(`userName ew ".org"`), ['sam']);
      assert.deepEqual(await find(`userName ne "sam.${tag}@example.org"`), ['quinn', 'rae']);
      assert.deepEqual(await find(`name.givenName gt "Quinn"`), ['rae']);
      assert.deepEqual(await find(`name.givenName ge "Quinn"`), ['quinn', 'rae']);
      assert.deepEqual(await find(`name.givenName lt "R"`), ['quinn']);
      assert.deepEqual(await find(`name.givenName le "Rae"`), ['quinn', 'rae']);
      assert.deepEqual(await find('displayName pr'), ['sam']);
      assert.deepEqual(await find('active eq false'), ['rae']);
      assert.deepEqual(await find('active eq "True"'), ['quinn', 'sam']);
      assert.deepEqual(await find('not (active eq false) and (name.familyName eq "zed" or displayName pr)'), [
        'quinn',
        'sam',
      ]);
      assert.deepEqual(await find(`emails[type eq "work" and value co "quinn"]`), ['quinn']);
      assert.deepEqual(await find(`emails[type eq "work" and value co "rae"]`), []);
      assert.deepEqual(await find(`emails.value eq "RAE.${tag}@home.example"`), ['rae']);
      assert.deepEqual(await find(`${ENTERPRISE}:department eq "sales"`), ['quinn']);
      assert.deepEqual(await find(`meta.created gt "2000-01-01T00:00:00Z"`), ['quinn', 'rae', 'sam']);
      assert.deepEqual(await find(`externalId eq "EXT-${tag}-Q"`), [], 'externalId is case-exact');
    });

    test('startIndex / count page in a stable order with totalResults; count is capped at 500', async () => {
      const filter = encodeURIComponent(`externalId sw "ext-${tag}"`);
      const first = await scim('get', `/Users?filter=${filter}&startIndex=1&count=2`).expect(200);
      const second = await scim('get', `/Users?filter=${filter}&startIndex=3&count=2`).expect(200);
      assert.deepEqual([first.body.totalResults, first.body.startIndex, first.body.itemsPerPage], [3, 1, 2]);
      assert.deepEqual([second.body.totalResults, second.body.startIndex, second.body.itemsPerPage], [3, 3, 1]);
      const order = [...first.body.Resources, ...second.body.Resources].map((r: { id: string }) => r.id);
      assert.deepEqual(order, [...Object.values(ids)].sort());
      const none = await scim('get', `/Users?filter=${filter}&count=0`).expect(200);
      assert.deepEqual([none.body.totalResults, none.body.Resources.length], [3, 0]);
      const huge = await scim('get', `/Users?count=100000000`).expect(200);
      assert.ok(huge.body.itemsPerPage <= 500);
      assertScimError(await scim('get', '/Users?count=ten'), 400, 'invalidValue');
      const nobody = await scim(
        'get',
        `/Users?filter=${encodeURIComponent('userName eq "nobody-at-all@example.com"')}`,
      ).expect(200);
      assert.deepEqual([nobody.body.totalResults, nobody.body.Resources], [0, []]);
    });

    test('POST /Users/.search and /.search take the query in the body', async () => {
      const searched = await scim('post', '/Users/.search', {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
        filter: `externalId sw "ext-${tag}"`,
        attributes: ['userName'],
        count: 2,
      }).expect(200);
      assert.deepEqual([searched.body.totalResults, searched.body.itemsPerPage], [3, 2]);
      assert.deepEqual(Object.keys(searched.body.Resources[0]).sort(), ['id', 'schemas', 'userName']);
      const everywhere = await scim('post', '/.search', { filter: `userName eq "rae.${tag}@example.com"` }).expect(200);
      assert.deepEqual(
        everywhere.body.Resources.map((r: { id: string }) => r.id),
        [ids.rae],
      );
      const groupsToo = await scim('post', '/.search', { filter: 'displayName eq "Demo Team"', count: 10 }).expect(200);
      assert.ok(
        groupsToo.body.Resources.some(
          (r: { id: string; schemas: string[] }) => r.schemas[0] === CORE_GROUP && r.id === String(suite.h.groups.demo),
        ),
      );
      assertScimError(await scim('post', '/Users/.search', { filter: 'userName eq' }), 400, 'invalidFilter');
    });

    test('attributes and excludedAttributes shape the resources', async () => {
      const only = await scim('get', `/Users/${ids.quinn}?attributes=userName,name.givenName`).expect(200);
      assert.deepEqual(only.body, {
        schemas: [CORE_USER, ENTERPRISE],
        id: ids.quinn,
        userName: `Quinn.${tag}@example.com`,
        name: { givenName: 'Quinn' },
      });
      const without = await scim('get', `/Users/${ids.quinn}?excludedAttributes=emails,${ENTERPRISE},meta`).expect(200);
      assert.equal(without.body.emails, undefined);
      assert.equal(without.body[ENTERPRISE], undefined);
      assert.equal(without.body.meta, undefined);
      assert.equal(without.body.userName, `Quinn.${tag}@example.com`);
      assertScimError(await scim('get', `/Users/${ids.quinn}?attributes=shoeSize`), 400, 'invalidValue');
    });

    test('absurd filters are 400 invalidFilter, never a 500', async () => {
      for (const bad of [
        'userName eq',
        'userName zz "x"',
        'password eq "x"',
        'addresses.locality eq "x"',
        'active gt true',
        'meta.created gt "last week"',
        '((((userName eq "x"',
        'emails[value eq "x"',
        `userName eq "${'x'.repeat(3000)}"`,
        Array.from({ length: 80 }, (_, i) => `userName eq "u${i}"`).join(' or '),
      ]) {
        assertScimError(await scim('get', `/Users?filter=${encodeURIComponent(bad)}`), 400, 'invalidFilter');
      }
      assertScimError(await scim('get', `/Users/${'x'.repeat(10)}`), 404);
    });
  });

  test('PUT replaces the user; If-Match with a stale ETag is 412 and changes nothing', async () => {
    const userName = `put.${unique()}@example.com`;
    const created = await scim('post', '/Users', {
      schemas: [CORE_USER],
      userName,
      title: 'Driver',
      name: { givenName: 'Put', familyName: 'Me' },
    }).expect(201);
    const id = created.body.id;
    const replaced = await scim(
      'put',
      `/Users/${id}`,
      { schemas: [CORE_USER], id, userName, name: { givenName: 'Putty' }, active: true },
      { 'If-Match': 'W/"1"' },
    ).expect(200);
    assert.equal(replaced.headers.etag, 'W/"2"');
    assert.deepEqual(replaced.body.name, { givenName: 'Putty' });
    assert.equal(replaced.body.title, undefined, 'PUT replaces: attributes left out are cleared');
    assertScimError(
      await scim(
        'put',
        `/Users/${id}`,
        { schemas: [CORE_USER], userName, displayName: 'Lost' },
        { 'If-Match': 'W/"1"' },
      ),
      412,
    );
    assertScimError(
      await scim('put', `/Users/${id}`, { schemas: [CORE_USER], id: 'SomeOther1', userName }),
      400,
      'mutability',
    );
    assert.equal((await scim('get', `/Users/${id}`).expect(200)).body.displayName, undefined);
    await scim('get', `/Users/${id}`, undefined, { 'If-None-Match': 'W/"2"' }).expect(304);
  });

  test('DELETE: 204, gone from SCIM, the userName is free again, the audit log keeps the before state', async () => {
    const userName = `leaver.${unique()}@example.com`;
    const id = (await scim('post', '/Users', { schemas: [CORE_USER], userName }).expect(201)).body.id;
    await scim('delete', `/Users/${id}`).expect(204);
    assertScimError(await scim('get', `/Users/${id}`), 404);
    assertScimError(await scim('delete', `/Users/${id}`), 404);
    assertScimError(
      await scim('patch', `/Users/${id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'active', value: true }],
      }),
      404,
    );
    const listed = await scim('get', `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`).expect(200);
    assert.equal(listed.body.totalResults, 0);
    await scim('post', '/Users', { schemas: [CORE_USER], userName }).expect(201);
    const audit = await auditOf(id);
    assert.deepEqual(
      audit.map((a: { operation: string }) => a.operation),
      ['create', 'delete'],
    );
    assert.equal(audit[1].before.userName, userName);
    assert.equal(audit[1].after, null);
    assert.equal(audit[1].actor, 'mileage-scim');
  });

  test("the actor is the token's client id attested by the gateway: a gateway with another secret gets 503", async () => {
    const userName = `attest-${unique()}@example.com`;
    const id = (await scim('post', '/Users', { schemas: [CORE_USER], userName }).expect(201)).body.id;
    assert.deepEqual(
      (await auditOf(id)).map((a: { actor: string }) => a.actor),
      ['mileage-scim'],
    );
    // A gateway (or anyone on the network) without a key the SCIM service holds: refused, nothing is written. To the
    // client a retryable 503 (during a key rotation done out of order, the next try may meet a replica that holds it).
    const impostor = suite.h.app({ actorAttestationSecret: 'not-the-secret-the-scim-service-has-0123456789' });
    const before = await auditCount();
    const refused = await request(impostor)
      .post('/scim/v2/Users')
      .set('Authorization', `Bearer ${suite.token}`)
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ schemas: [CORE_USER], userName: `impostor-${unique()}@example.com` }));
    assertScimError(refused, 503);
    assert.equal(refused.headers['retry-after'], '5');
    assert.doesNotMatch(refused.body.detail, /attest/i);
    assert.equal(await auditCount(), before);
  });

  test("a gateway attesting with the SCIM service's previous key is served (a key rotation's overlap)", async () => {
    const rotating = suite.h.app({ actorAttestationSecret: ACTOR_ATTESTATION_PREVIOUS_SECRET });
    const created = await request(rotating)
      .post('/scim/v2/Users')
      .set('Authorization', `Bearer ${suite.token}`)
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ schemas: [CORE_USER], userName: `rotating-${unique()}@example.com` }))
      .expect(201);
    assert.deepEqual(
      (await auditOf(created.body.id)).map((a: { actor: string }) => a.actor),
      ['mileage-scim'],
    );
  });

  test("each SCIM write records its attestation's nonce, once (another SCIM replica refuses its replay there)", async () => {
    const created = await request(suite.h.app())
      .post('/scim/v2/Users')
      .set('Authorization', `Bearer ${suite.token}`)
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ schemas: [CORE_USER], userName: `nonce-${unique()}@example.com` }))
      .expect(201);
    const [entry] = await auditOf(created.body.id);
    // The attestation's format: 16 random bytes, base64url (attestation.ts).
    assert.match(entry.attestation_nonce, /^[A-Za-z0-9_-]{22}$/);
  });

  test('the audit log is append-only', async () => {
    await assert.rejects(suite.h.usersDb.knex('provisioning_audit').update({ actor: 'someone-else' }), /append-only/);
    await assert.rejects(suite.h.usersDb.knex('provisioning_audit').delete(), /append-only/);
    for (const db of [suite.h.usersDb, suite.h.groupsDb])
      await assert.rejects(db.knex('provisioning_audit').truncate(), /append-only/);
  });
});

describe('SCIM: deactivation, deletion and membership are seen on /v1 at once', () => {
  test('PATCH active false refuses Bob on /v1 immediately; true lets him in again', async () => {
    const bob = await suite.h.token('bob@example.com', 'users_read');
    await request(suite.app).get('/v1/users/me').set('Authorization', `Bearer ${bob}`).expect(200);
    await scim('patch', '/Users/BobDriver1', {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
    }).expect(200);
    await request(suite.app).get('/v1/users/me').set('Authorization', `Bearer ${bob}`).expect(403);
    const back = await scim('patch', '/Users/BobDriver1', {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { active: true } }],
    }).expect(200);
    assert.equal(back.body.active, true);
    await request(suite.app).get('/v1/users/me').set('Authorization', `Bearer ${bob}`).expect(200);
  });

  test('a member added by SCIM is a driver on /v1; removing them takes them out; admins keep their role', async () => {
    const alice = await suite.h.token('alice@example.com', 'groups_read');
    const userName = `joiner.${unique()}@example.com`;
    const id = (await scim('post', '/Users', { schemas: [CORE_USER], userName }).expect(201)).body.id;
    await scim('patch', `/Groups/${suite.h.groups.demo}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: id }] }],
    }).expect(200);
    const members = async () =>
      (
        await request(suite.app)
          .get(`/v1/groups/${suite.h.groups.demo}`)
          .set('Authorization', `Bearer ${alice}`)
          .expect(200)
      ).body.resources[0].members as { value: string; is_admin: boolean; is_driver: boolean }[];
    assert.deepEqual(
      (await members()).find((m) => m.value === id),
      { value: id, display: userName, is_admin: false, is_driver: true },
    );
    assert.deepEqual(
      (await members()).find((m) => m.value === 'AliceAdm01'),
      { value: 'AliceAdm01', display: 'alice@example.com', is_admin: true, is_driver: false },
    );
    await scim('patch', `/Groups/${suite.h.groups.demo}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'remove', path: `members[value eq "${id}"]` }],
    }).expect(200);
    assert.equal(
      (await members()).find((m) => m.value === id),
      undefined,
    );
    assert.ok(
      (await members()).find((m) => m.value === 'AliceAdm01')?.is_admin,
      'Alice stays admin through every change',
    );
  });
});

describe('SCIM Groups', () => {
  test('GET by displayName (case-insensitive), excludedAttributes=members, and one group with members', async () => {
    const found = await scim(
      'get',
      `/Groups?filter=${encodeURIComponent('displayName eq "demo team"')}&excludedAttributes=members`,
    ).expect(200);
    assert.equal(found.body.totalResults, 1);
    assert.deepEqual(Object.keys(found.body.Resources[0]).sort(), ['displayName', 'id', 'meta', 'schemas']);
    assert.equal(found.body.Resources[0].id, String(suite.h.groups.demo));
    const one = await scim('get', `/Groups/${suite.h.groups.demo}`).expect(200);
    assert.equal(one.body.displayName, 'Demo Team');
    const alice = one.body.members.find((m: { value: string }) => m.value === 'AliceAdm01');
    assert.deepEqual(alice, {
      value: 'AliceAdm01',
      display: 'alice@example.com',
      $ref: 'http://127.0.0.1:8080/scim/v2/Users/AliceAdm01',
      type: 'User',
    });
    assert.match(one.headers.etag!, /^W\/"\d+"$/);
    assertScimError(await scim('get', '/Groups/999999'), 404);
    assertScimError(await scim('get', '/Groups/not-a-number'), 404);
    assertScimError(await scim('get', `/Groups?filter=${encodeURIComponent('owner eq "x"')}`), 400, 'invalidFilter');
  });

  test('POST and DELETE are 501 SCIM errors', async () => {
    assertScimError(await scim('post', '/Groups', { schemas: [CORE_GROUP], displayName: 'New' }), 501);
    assertScimError(await scim('delete', `/Groups/${suite.h.groups.demo}`), 501);
  });

  test('PUT replaces name and members; unknown member ids are 400 invalidValue and nothing changes', async () => {
    const before = (await scim('get', `/Groups/${suite.h.groups.other}`).expect(200)).body;
    const auditBefore = (await auditOf(String(suite.h.groups.other))).length;
    assertScimError(
      await scim('put', `/Groups/${suite.h.groups.other}`, {
        schemas: [CORE_GROUP],
        displayName: 'Renamed',
        members: [{ value: 'BobDriver1' }, { value: 'Nobody0000' }],
      }),
      400,
      'invalidValue',
    );
    const unchanged = (await scim('get', `/Groups/${suite.h.groups.other}`).expect(200)).body;
    assert.deepEqual(unchanged, before);
    assert.equal((await auditOf(String(suite.h.groups.other))).length, auditBefore);

    const put = await scim('put', `/Groups/${suite.h.groups.other}`, {
      schemas: [CORE_GROUP, 'urn:example:unknown:Group'],
      displayName: 'Other Team',
      externalId: 'okta-other',
      members: [{ value: 'BobDriver1' }, { value: 'AliceAdm01' }],
      'urn:example:unknown:Group': { x: 1 },
    }).expect(200);
    assert.deepEqual(put.body.members.map((m: { value: string }) => m.value).sort(), ['AliceAdm01', 'BobDriver1']);
    assert.equal(put.body.externalId, 'okta-other');
    const bob = await suite.h.token('bob@example.com', 'groups_read');
    const v1 = await request(suite.app)
      .get(`/v1/groups/${suite.h.groups.other}`)
      .set('Authorization', `Bearer ${bob}`)
      .expect(200);
    const roles = Object.fromEntries(
      v1.body.resources[0].members.map((m: { value: string; is_admin: boolean; is_driver: boolean }) => [
        m.value,
        [m.is_admin, m.is_driver],
      ]),
    );
    assert.deepEqual(
      roles,
      { AliceAdm01: [false, true], BobDriver1: [true, true] },
      'Bob stayed and kept admin; Alice joined as a driver',
    );
    // Back as it was for the other suites.
    await scim('put', `/Groups/${suite.h.groups.other}`, {
      schemas: [CORE_GROUP],
      displayName: 'Other Team',
      members: [{ value: 'BobDriver1' }],
    }).expect(200);
  });

  test('PATCH members add / remove / replace and displayName, with If-Match', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (await scim('post', '/Users', { schemas: [CORE_USER], userName: `m${i}.${unique()}@example.com` }).expect(201))
          .body.id,
      );
    const path = `/Groups/${suite.h.groups.other}`;
    const etag = (await scim('get', path).expect(200)).headers.etag!;
    const added = await scim(
      'patch',
      path,
      {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'add', path: 'members', value: ids.map((value) => ({ value })) },
          { op: 'replace', path: 'displayName', value: 'Other Team 2' },
        ],
      },
      { 'If-Match': etag },
    ).expect(200);
    assert.equal(added.body.displayName, 'Other Team 2');
    assert.equal(added.body.members.length, 4);
    assertScimError(
      await scim(
        'patch',
        path,
        { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'Stale' }] },
        { 'If-Match': etag },
      ),
      412,
    );
    const removed = await scim('patch', path, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Remove', path: 'members', value: [{ value: ids[0] }, { value: ids[1] }] }],
    }).expect(200);
    assert.deepEqual(removed.body.members.map((m: { value: string }) => m.value).sort(), ['BobDriver1', ids[2]].sort());
    const replaced = await scim('patch', path, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'replace', path: 'members', value: [{ value: 'BobDriver1' }] },
        { op: 'replace', value: { id: String(suite.h.groups.other), displayName: 'Other Team' } },
      ],
    }).expect(200);
    assert.deepEqual(
      replaced.body.members.map((m: { value: string }) => m.value),
      ['BobDriver1'],
    );
    assert.equal(replaced.body.displayName, 'Other Team');
    assertScimError(
      await scim('patch', path, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'add', path: 'members', value: [{ value: 'Nobody0000' }] }],
      }),
      400,
      'invalidValue',
    );
    assertScimError(
      await scim('patch', path, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { id: '12345' } }] }),
      400,
      'mutability',
    );
    assertScimError(
      await scim('patch', path, { schemas: [PATCH_OP], Operations: [{ op: 'move', path: 'members' }] }),
      400,
      'invalidSyntax',
    );
    assertScimError(
      await scim('patch', path, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'owner', value: 'x' }] }),
      400,
      'invalidPath',
    );
  });
});

describe('SCIM: the attestation is taken once and covers the headers the SCIM service reads', () => {
  type Answer = scimV1.HandleRequestResponse;
  /**
   * A gateway whose SCIM calls pass a hop that `relays` each (sending it on to the SCIM service with `send`, altered,
   * several times, or not at all): what a party on the internal network could do with a captured request.
   */
  async function gatewayBehind(
    relay: (
      captured: scimV1.HandleRequestRequest,
      send: (r: scimV1.HandleRequestRequest) => Promise<Answer>,
    ) => Promise<Answer>,
    options: { metrics?: Metrics } = {},
  ) {
    const logger = createLogger({ service: 'hop', level: 'silent' });
    const upstream = createGrpcClient(scimV1.ScimServiceClient, suite.h.scimAddress, { defaultDeadlineMs: 5_000 });
    const handlers: Handlers<scimV1.ScimServiceServer> = {
      handleRequest: (captured, call) =>
        relay(captured, (sent) =>
          upstream.handleRequest(sent, { requestId: call.requestId }).catch((err: ServiceError) => {
            const { code, message, reason } = decodeServiceError(err);
            throw new AppError(code, message, reason ? { reason } : {});
          }),
        ),
      // As a SCIM replica of the release before: the gateway then sends a turn's reads one call each.
      handleRequests: () => Promise.reject(new AppError(grpcStatus.UNIMPLEMENTED, 'HandleRequests is not served here')),
    };
    const hop = await startGrpcServer({
      address: '127.0.0.1:0',
      services: [{ definition: scimV1.ScimServiceService, handlers: handlers as ServiceRegistration['handlers'] }],
      protoFiles: [PROTO_FILES.scim],
      logger,
      metrics: new Metrics('hop'),
    });
    after(async () => {
      upstream.close();
      await hop.shutdown(1_000);
    });
    return suite.h.app({ scimAddress: `127.0.0.1:${hop.port}`, ...options });
  }
  const create = (app: Express, userName: string) =>
    request(app)
      .post('/scim/v2/Users')
      .set('Authorization', `Bearer ${suite.token}`)
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ schemas: [CORE_USER], userName }));
  const usersNamed = async (userName: string) =>
    (await suite.h.usersDb.knex('users').whereRaw('lower(user_name) = ?', [userName.toLowerCase()])).length;

  test('a request sent twice under one attestation: the first is served, the replay refused (503 to the client)', async () => {
    const replaying = await gatewayBehind(async (r, send) => {
      await send(r);
      return send(r);
    });
    const userName = `replayed-${unique()}@example.com`;
    assertScimError(await create(replaying, userName), 503);
    assert.equal(await usersNamed(userName), 1, 'the first is served, the replay changes nothing');
  });

  test('a client repeating its X-Request-Id is served each time: the nonce is the gateway’s, not the request id', async () => {
    for (let i = 0; i < 2; i++)
      await scim('get', '/ServiceProviderConfig', undefined, { 'X-Request-Id': 'idp-retry-0001' }).expect(200);
  });

  test('If-Match or Content-Type changed, added or removed under a captured attestation: refused, nothing written', async () => {
    const userName = `preconditioned-${unique()}@example.com`;
    const created = (await scim('post', '/Users', { schemas: [CORE_USER], userName }).expect(201)).body;
    const replacement = { schemas: [CORE_USER], userName, displayName: 'Changed under the attestation' };
    const changes: ((headers: Record<string, string>) => Record<string, string>)[] = [
      (h) => ({ ...h, 'if-match': '*' }),
      ({ 'if-match': _dropped, ...h }) => h,
      (h) => ({ ...h, 'content-type': 'application/json' }),
      ({ 'content-type': _dropped, ...h }) => h,
      (h) => ({ ...h, 'if-none-match': '*' }),
    ];
    for (const change of changes) {
      const altering = await gatewayBehind((r, send) => send({ ...r, headers: change(r.headers) }));
      const res = await request(altering)
        .put(`/scim/v2/Users/${created.id}`)
        .set('Authorization', `Bearer ${suite.token}`)
        .set('Content-Type', 'application/scim+json')
        .set('If-Match', created.meta.version)
        .send(JSON.stringify(replacement));
      assertScimError(res, 503);
    }
    const now = (await scim('get', `/Users/${created.id}`).expect(200)).body;
    assert.equal(now.meta.version, created.meta.version);
    assert.equal(now.displayName, undefined);
    // The same request unaltered is served.
    const unaltered = await gatewayBehind((r, send) => send(r));
    await request(unaltered)
      .put(`/scim/v2/Users/${created.id}`)
      .set('Authorization', `Bearer ${suite.token}`)
      .set('Content-Type', 'application/scim+json')
      .set('If-Match', created.meta.version)
      .send(JSON.stringify(replacement))
      .expect(200);
  });

  test('a SCIM replica that refuses the v2 attestation gets no second call in another format: 503, nothing created', async () => {
    const sent: string[] = [];
    const refusing = await gatewayBehind(async (r) => {
      sent.push(r.actorAttestation);
      throw new AppError(
        grpcStatus.UNAUTHENTICATED,
        'the caller is not attested by the gateway (malformed attestation)',
        { reason: ACTOR_NOT_ATTESTED },
      );
    });
    const userName = `refused-${unique()}@example.com`;
    assertScimError(await create(refusing, userName), 503);
    assert.equal(sent.length, 1);
    assert.match(sent[0]!, /^v2\./);
    const found = await scim('get', `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`).expect(200);
    assert.equal(found.body.totalResults, 0);
  });
});

describe('SCIM: a read whose call got no answer is sent once more, a write never', () => {
  /**
   * A gateway whose SCIM calls pass a hop that fails the first call of each method as a dropped connection does
   * (UNAVAILABLE raised without a handler's status details), then forwards every call to the SCIM service.
   */
  async function gatewayWithDroppedFirstCall(metrics: Metrics) {
    const upstream = new scimV1.ScimServiceClient(suite.h.scimAddress, grpcCredentials.createInsecure());
    const attestations: string[] = [];
    const dropped = new Set<string>();
    const hop = new GrpcServer();
    hop.addService(scimV1.ScimServiceService, {
      handleRequest: (
        call: ServerUnaryCall<scimV1.HandleRequestRequest, scimV1.HandleRequestResponse>,
        callback: sendUnaryData<scimV1.HandleRequestResponse>,
      ) => {
        attestations.push(call.request.actorAttestation);
        if (!dropped.has(call.request.method)) {
          dropped.add(call.request.method);
          callback({ code: grpcStatus.UNAVAILABLE, details: 'Connection dropped' });
          return;
        }
        upstream.handleRequest(call.request, call.metadata, (err, answer) => callback(err, answer));
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      hop.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    after(() => {
      upstream.close();
      hop.forceShutdown();
    });
    return { app: suite.h.app({ scimAddress: `127.0.0.1:${port}`, metrics }), attestations };
  }
  const retries = async (metrics: Metrics) =>
    (await metrics.registry.getSingleMetric('gateway_scim_read_retries_total')!.get()).values[0]?.value ?? 0;

  test('GET: answered by the second call, under a second attestation (the first nonce may be spent)', async () => {
    const metrics = new Metrics('gateway');
    const { app, attestations } = await gatewayWithDroppedFirstCall(metrics);
    const res = await request(app)
      .get('/scim/v2/Users?filter=userName eq "nobody-here@example.com"')
      .set('Authorization', `Bearer ${suite.token}`)
      .expect(200);
    assert.equal(res.body.totalResults, 0);
    assert.equal(attestations.length, 2);
    assert.notEqual(attestations[0], attestations[1]);
    assert.equal(await retries(metrics), 1);
  });

  test('POST: the dropped call is the answer (503), sent once, nothing created', async () => {
    const metrics = new Metrics('gateway');
    const { app, attestations } = await gatewayWithDroppedFirstCall(metrics);
    const userName = `dropped-${unique()}@example.com`;
    const res = await request(app)
      .post('/scim/v2/Users')
      .set('Authorization', `Bearer ${suite.token}`)
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ schemas: [CORE_USER], userName }));
    assertScimError(res, 503);
    assert.equal(attestations.length, 1);
    assert.equal(await retries(metrics), 0);
    assert.equal(
      (await suite.h.usersDb.knex('users').whereRaw('lower(user_name) = ?', [userName.toLowerCase()])).length,
      0,
    );
  });
});
