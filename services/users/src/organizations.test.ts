// Organizations in the Users process, over real gRPC and PostgreSQL, served as the runtime role: each organization
// sees only its own users, SCIM tokens and provisioning trail, and the database enforces it even for a query that
// forgets its organization filter (row-level security).
import { status } from '@grpc/grpc-js';
import { filterV1, scimAuditV1, usersV1 } from '@mileage/proto';
import { inOrganization } from '@mileage/runtime/database';
import { millisToTimestamp, timestampToMillis } from '@mileage/runtime/formats';
import { findAttribute, USER_RESOURCE_TYPE } from '@mileage/scim-domain';
import { rejection } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { before, describe, test } from 'node:test';
import { MAX_ACTIVE_SCIM_TOKENS } from './organizations-repo';
import { user, usersSuite } from './users-suite.fixture';

const suite = usersSuite('users_orgs');
const DEMO = 1;
let globex: number;

const sha256 = (secret: string) => createHash('sha256').update(secret).digest();
const userNameEq = (value: string): filterV1.Filter => ({
  expr: {
    $case: 'comparison',
    value: { attribute: 'userName', operator: filterV1.Operator.OPERATOR_EQ, value: { $case: 'stringValue', value } },
  },
});

const create = (organizationId: number, name: string, expireTime?: usersV1.ScimToken['expireTime']) =>
  suite.organizationsIn(organizationId).createScimToken({
    name,
    actor: 'user:ErinAdmin1',
    requestId: 'req-t',
    ...(expireTime ? { expireTime } : {}),
  });

describe('the Users process with organizations', () => {
  before(async () => {
    const { organization } = await suite.organizations.createOrganization({ name: 'Globex', alias: 'globex' });
    globex = organization!.id;
  });

  describe('organizations', () => {
    test('the default organization is seeded; new ones continue at 2; aliases are unique and checked', async () => {
      assert.equal(globex, 2);
      const demo = (await suite.organizations.getOrganization({ key: { $case: 'id', value: DEMO } })).organization!;
      assert.deepEqual([demo.id, demo.name, demo.alias], [DEMO, 'Demo Org', 'demo']);
      const byAlias = (await suite.organizations.getOrganization({ key: { $case: 'alias', value: 'globex' } }))
        .organization!;
      assert.deepEqual([byAlias.id, byAlias.name], [globex, 'Globex']);
      for (const key of [
        { $case: 'id', value: 999 },
        { $case: 'id', value: -1 },
        { $case: 'alias', value: 'nobody' },
        { $case: 'alias', value: 'Not An Alias' },
      ] as const)
        assert.equal((await rejection(suite.organizations.getOrganization({ key }))).code, status.NOT_FOUND);
      const taken = await rejection(suite.organizations.createOrganization({ name: 'Globex 2', alias: 'globex' }));
      assert.deepEqual([taken.code, taken.reason], [status.ALREADY_EXISTS, 'ORGANIZATION_ALIAS_TAKEN']);
      const bad = await rejection(suite.organizations.createOrganization({ name: '', alias: 'Upper_Case' }));
      assert.equal(bad.code, status.INVALID_ARGUMENT);
      assert.deepEqual(bad.fieldViolations.map((v) => v.field).sort(), ['alias', 'name']);
      // Digits only (with hyphens or not) would read as an organization id in a claim: refused, nothing created.
      for (const alias of ['2', '42', '1-800']) {
        const digits = await rejection(suite.organizations.createOrganization({ name: 'Digits', alias }));
        assert.equal(digits.code, status.INVALID_ARGUMENT, alias);
        assert.deepEqual(
          digits.fieldViolations.map((v) => [v.field, v.description]),
          [['alias', '1..63 characters [a-z0-9-], at least one of them a letter']],
        );
      }
      const withLetter = (await suite.organizations.createOrganization({ name: 'Digits', alias: '1-800-a' }))
        .organization!;
      assert.equal(withLetter.alias, '1-800-a');
    });

    test('a call that acts inside an organization and names none is refused', async () => {
      for (const call of [
        () => suite.users.createUser({ user: user() }),
        () => suite.users.listUsers({ offset: 0, limit: 10 }),
        () => suite.users.listProvisioningEvents({ limit: 10, beforeId: 0 }),
        () => suite.organizations.listScimTokens({}),
        () => suite.organizations.createScimToken({ name: 'n', actor: 'a', requestId: '' }),
      ]) {
        const err = await rejection(call());
        assert.deepEqual([err.code, err.reason], [status.FAILED_PRECONDITION, 'ORGANIZATION_REQUIRED']);
      }
    });
  });

  describe('users of two organizations', () => {
    test('externalId is unique per organization as sent, as /Schemas declares it (uniqueness server, caseExact)', async () => {
      const declared = findAttribute(USER_RESOURCE_TYPE.common, 'externalId')!;
      assert.deepEqual([declared.uniqueness, declared.caseExact], ['server', true]);
      await suite.usersIn(globex).createUser({ user: user({ externalId: 'ext-case' }) });
      const otherCase = (await suite.usersIn(globex).createUser({ user: user({ externalId: 'EXT-CASE' }) })).user!;
      assert.equal(otherCase.externalId, 'EXT-CASE');
      const again = await rejection(suite.usersIn(globex).createUser({ user: user({ externalId: 'ext-case' }) }));
      assert.deepEqual([again.code, again.reason], [status.ALREADY_EXISTS, 'USER_EXTERNAL_ID_TAKEN']);
    });

    test('the same userName and externalId in two organizations; taken only within one', async () => {
      const inDemo = (
        await suite.usersIn(DEMO).createUser({ user: user({ userName: 'same@example.com', externalId: 'ext-1' }) })
      ).user!;
      const inGlobex = (
        await suite.usersIn(globex).createUser({ user: user({ userName: 'SAME@example.com', externalId: 'ext-1' }) })
      ).user!;
      assert.deepEqual([inDemo.organizationId, inGlobex.organizationId], [DEMO, globex]);
      const name = await rejection(suite.usersIn(globex).createUser({ user: user({ userName: 'same@EXAMPLE.com' }) }));
      assert.deepEqual([name.code, name.reason], [status.ALREADY_EXISTS, 'USER_NAME_TAKEN']);
      const ext = await rejection(suite.usersIn(globex).createUser({ user: user({ externalId: 'ext-1' }) }));
      assert.deepEqual([ext.code, ext.reason], [status.ALREADY_EXISTS, 'USER_EXTERNAL_ID_TAKEN']);
      const renamed = await rejection(
        suite.usersIn(globex).updateUser({
          user: { ...(await suite.usersIn(globex).createUser({ user: user() })).user!, userName: 'same@example.com' },
          expectedVersion: 0,
        }),
      );
      assert.deepEqual([renamed.code, renamed.reason], [status.ALREADY_EXISTS, 'USER_NAME_TAKEN']);
      for (const [organizationId, id] of [
        [DEMO, inDemo.id],
        [globex, inGlobex.id],
      ] as const) {
        const found = await suite.usersIn(organizationId).listUsers({
          filter: userNameEq('same@example.com'),
          offset: 0,
          limit: 10,
        });
        assert.deepEqual([found.totalSize, found.users.map((u) => u.id)], [1, [id]]);
      }
    });

    test("an id taken by another organization's user: a fresh id; taken in one's own: ALREADY_EXISTS", async () => {
      const first = (await suite.usersIn(DEMO).createUser({ user: user({ id: 'SharedId01' }) })).user!;
      assert.equal(first.id, 'SharedId01');
      const elsewhere = (await suite.usersIn(globex).createUser({ user: user({ id: 'SharedId01' }) })).user!;
      assert.match(elsewhere.id, /^[A-Za-z0-9]{10}$/);
      assert.notEqual(elsewhere.id, 'SharedId01');
      assert.equal(elsewhere.organizationId, globex);
      const own = await rejection(suite.usersIn(DEMO).createUser({ user: user({ id: 'SharedId01' }) }));
      assert.deepEqual([own.code, own.reason], [status.ALREADY_EXISTS, 'USER_ID_TAKEN']);
    });

    test("another organization's user is nowhere: not read, listed, counted, changed or deleted", async () => {
      const theirs = (await suite.usersIn(globex).createUser({ user: user({ externalId: 'hidden' }) })).user!;
      const demo = suite.usersIn(DEMO);
      const notFound = async (call: Promise<unknown>) => assert.equal((await rejection(call)).code, status.NOT_FOUND);
      await notFound(demo.getUser({ id: theirs.id, includeDeleted: true }));
      await notFound(demo.updateUser({ user: { ...theirs, displayName: 'x' }, expectedVersion: 0 }));
      await notFound(demo.updateUser({ user: { ...theirs, displayName: 'x' }, expectedVersion: theirs.version }));
      await notFound(demo.deleteUser({ id: theirs.id, expectedVersion: 0 }));
      assert.deepEqual((await demo.batchGetUsers({ ids: [theirs.id] })).users, []);
      const filter: filterV1.Filter = {
        expr: {
          $case: 'comparison',
          value: {
            attribute: 'externalId',
            operator: filterV1.Operator.OPERATOR_EQ,
            value: { $case: 'stringValue', value: 'hidden' },
          },
        },
      };
      assert.equal((await demo.listUsers({ filter, offset: 0, limit: 10 })).totalSize, 0);
      assert.equal((await demo.listUsers({ offset: 0, limit: 0 })).totalSize, (await suite.admin.knex('users').where({ organization_id: DEMO }).whereNull('deleted_at')).length); // prettier-ignore
      assert.equal((await suite.usersIn(globex).getUser({ id: theirs.id, includeDeleted: false })).user!.version, 1);
    });

    test('GetUser without an organization finds the user in theirs and names it', async () => {
      const theirs = (await suite.usersIn(globex).createUser({ user: user() })).user!;
      const { user: found } = await suite.users.getUser({ id: theirs.id, includeDeleted: false });
      assert.deepEqual(found, theirs);
      assert.deepEqual([found!.organizationId, found!.organizationAdmin], [globex, false]);
      await suite.usersIn(globex).deleteUser({ id: theirs.id, expectedVersion: 0 });
      assert.equal(
        (await rejection(suite.users.getUser({ id: theirs.id, includeDeleted: false }))).code,
        status.NOT_FOUND,
      );
      assert.ok((await suite.users.getUser({ id: theirs.id, includeDeleted: true })).user!.deleteTime);
      assert.equal(
        (await rejection(suite.users.getUser({ id: 'NoSuchOne1', includeDeleted: true }))).code,
        status.NOT_FOUND,
      );
    });

    test('BatchGetUsers without an organization finds the live users of every organization, in request order', async () => {
      const theirs = (await suite.usersIn(globex).createUser({ user: user() })).user!;
      const ours = (await suite.usersIn(DEMO).createUser({ user: user() })).user!;
      const gone = (await suite.usersIn(globex).createUser({ user: user() })).user!;
      await suite.usersIn(globex).deleteUser({ id: gone.id, expectedVersion: 0 });
      const { users: found } = await suite.users.batchGetUsers({ ids: [theirs.id, 'NoSuchOne1', gone.id, ours.id] });
      assert.deepEqual(found, [theirs, ours]);
      assert.deepEqual(
        found.map((u) => u.organizationId),
        [globex, DEMO],
      );
    });

    test("BatchGetUsers in the account view answers a caller's account across organizations: the driver's fields, the admin flag, the suspension", async () => {
      const admin = (
        await suite.usersIn(globex).createUser({
          user: user({ enterprise: { employeeNumber: '7' }, scimAttributes: { title: 'Boss' } }),
        })
      ).user!;
      await suite.organizationsIn(globex).setOrganizationAdmin({ userId: admin.id, organizationAdmin: true });
      const plain = (await suite.usersIn(DEMO).createUser({ user: user() })).user!;
      const { users: found } = await suite.users.batchGetUsers({
        ids: [admin.id, plain.id],
        view: usersV1.UserView.USER_VIEW_ACCOUNT,
      });
      const { users: drivers } = await suite.users.batchGetUsers({
        ids: [admin.id, plain.id],
        view: usersV1.UserView.USER_VIEW_DRIVER,
      });
      assert.deepEqual(found, [
        { ...drivers[0]!, organizationAdmin: true, organizationSuspended: false },
        { ...drivers[1]!, organizationAdmin: false, organizationSuspended: false },
      ]);
      assert.deepEqual(
        found.map((u) => u.organizationId),
        [globex, DEMO],
      );
      assert.equal(found[0]!.enterprise, undefined, 'no SCIM documents');
      assert.equal(found[0]!.createTime, undefined, 'no times');
    });

    test('user.deactivated is an event of the user’s organization', async () => {
      const theirs = (await suite.usersIn(globex).createUser({ user: user() })).user!;
      await suite.usersIn(globex).updateUser({ user: { ...theirs, active: false }, expectedVersion: 0 });
      const events = await suite.admin
        .knex('outbox')
        .select('event_type', 'organization_id')
        .where({ user_id: theirs.id });
      assert.deepEqual(events, [{ event_type: 'user.deactivated', organization_id: String(globex) }]);
    });

    test('SetOrganizationAdmin: a user of the organization only; the change is in the trail', async () => {
      const admin = (await suite.usersIn(globex).createUser({ user: user() })).user!;
      const set = await suite
        .organizationsIn(globex)
        .setOrganizationAdmin({ userId: admin.id, organizationAdmin: true });
      assert.deepEqual([set.user!.organizationAdmin, set.user!.version], [true, admin.version]);
      assert.equal((await suite.users.getUser({ id: admin.id, includeDeleted: false })).user!.organizationAdmin, true);
      const again = await suite
        .organizationsIn(globex)
        .setOrganizationAdmin({ userId: admin.id, organizationAdmin: true });
      assert.equal(again.user!.organizationAdmin, true);
      const elsewhere = await rejection(
        suite.organizationsIn(DEMO).setOrganizationAdmin({ userId: admin.id, organizationAdmin: false }),
      );
      assert.deepEqual([elsewhere.code, elsewhere.reason], [status.NOT_FOUND, 'USER_NOT_FOUND']);
      const trail = await suite.admin
        .knex('provisioning_audit')
        .select('organization_id', 'actor', 'operation', 'before', 'after')
        .where({ user_id: admin.id })
        .orderBy('id');
      assert.deepEqual(trail, [
        {
          organization_id: String(globex),
          actor: 'operator',
          operation: 'patch',
          before: { organizationAdmin: false },
          after: { organizationAdmin: true },
        },
      ]);
    });
  });

  describe('SCIM secret tokens', () => {
    test('created (secret shown once, only its SHA-256 kept), resolved, listed, revoked', async () => {
      const { token, secret } = await create(globex, 'Entra ID');
      assert.match(secret, /^mscim_[A-Za-z0-9_-]{43}$/);
      assert.deepEqual([token!.name, token!.organizationId, token!.lastUseTime], ['Entra ID', globex, undefined]);
      const [stored] = await suite.admin.knex('scim_tokens').where({ id: token!.id });
      assert.deepEqual(stored.secret_sha256, sha256(secret));
      assert.ok(!JSON.stringify(stored).includes(secret.slice(6)), 'the secret itself is not stored');

      const resolved = (await suite.organizations.resolveScimToken({ secretSha256: sha256(secret) })).token!;
      assert.deepEqual([resolved.id, resolved.organizationId], [token!.id, globex]);
      assert.ok(resolved.lastUseTime, 'the use is recorded');
      const [{ last_used_at: first }] = await suite.admin
        .knex('scim_tokens')
        .select('last_used_at')
        .where({ id: token!.id });
      await suite.organizations.resolveScimToken({ secretSha256: sha256(secret) });
      const [{ last_used_at: second }] = await suite.admin
        .knex('scim_tokens')
        .select('last_used_at')
        .where({ id: token!.id });
      assert.deepEqual(second, first, 'recorded at most once a minute');

      const listed = (await suite.organizationsIn(globex).listScimTokens({})).tokens;
      assert.ok(listed.some((t) => t.id === token!.id));
      assert.ok(!(await suite.organizationsIn(DEMO).listScimTokens({})).tokens.some((t) => t.id === token!.id));
      const revoke = (organizationId: number) =>
        suite
          .organizationsIn(organizationId)
          .revokeScimToken({ id: token!.id, actor: 'user:ErinAdmin1', requestId: 'req-r' });
      assert.equal((await rejection(revoke(DEMO))).code, status.NOT_FOUND, "another organization's token");
      assert.equal((await revoke(globex)).token!.id, token!.id);
      assert.equal((await rejection(revoke(globex))).code, status.NOT_FOUND, 'revoked already');
      const gone = await rejection(suite.organizations.resolveScimToken({ secretSha256: sha256(secret) }));
      assert.deepEqual([gone.code, gone.reason], [status.NOT_FOUND, 'SCIM_TOKEN_NOT_FOUND']);
      assert.ok(!(await suite.organizationsIn(globex).listScimTokens({})).tokens.some((t) => t.id === token!.id));
      const trail = await suite.admin
        .knex('provisioning_audit')
        .select('organization_id', 'actor', 'operation', 'request_id')
        .where({ scim_token_id: token!.id })
        .orderBy('id');
      assert.deepEqual(trail, [
        { organization_id: String(globex), actor: 'user:ErinAdmin1', operation: 'create', request_id: 'req-t' },
        { organization_id: String(globex), actor: 'user:ErinAdmin1', operation: 'revoke', request_id: 'req-r' },
      ]);
    });

    test('unknown, malformed and expired tokens resolve to nothing; an expiry must be in the future', async () => {
      const unknown = await rejection(suite.organizations.resolveScimToken({ secretSha256: sha256('mscim_nothing') }));
      assert.equal(unknown.code, status.NOT_FOUND);
      const short = await rejection(suite.organizations.resolveScimToken({ secretSha256: Buffer.alloc(31) }));
      assert.equal(short.code, status.INVALID_ARGUMENT);
      const past = await rejection(create(globex, 'late', millisToTimestamp(Date.now() - 1_000)));
      assert.deepEqual(
        past.fieldViolations.map((v) => v.field),
        ['expire_time'],
      );
      for (const name of ['', 'x'.repeat(101)])
        assert.equal((await rejection(create(globex, name))).code, status.INVALID_ARGUMENT, `name ${name.length}`);

      const expiry = Date.now() + 3_600_000;
      const { token, secret } = await create(globex, 'for an hour', millisToTimestamp(expiry));
      assert.equal(timestampToMillis(token!.expireTime!), expiry);
      assert.equal((await suite.organizations.resolveScimToken({ secretSha256: sha256(secret) })).token!.id, token!.id);
      // The hour passes (the clock is the database's).
      await suite.admin.knex('scim_tokens').where({ id: token!.id }).update({ expires_at: suite.admin.knex.raw(`now() - interval '1 second'`) }); // prettier-ignore
      assert.equal((await rejection(suite.organizations.resolveScimToken({ secretSha256: sha256(secret) }))).code, status.NOT_FOUND); // prettier-ignore
      assert.ok(!(await suite.organizationsIn(globex).listScimTokens({})).tokens.some((t) => t.id === token!.id));
    });

    test(`at most ${MAX_ACTIVE_SCIM_TOKENS} active tokens per organization, also when created at once`, async () => {
      const { organization } = await suite.organizations.createOrganization({ name: 'Initech', alias: 'initech' });
      const initech = organization!.id;
      const results = await Promise.allSettled(
        Array.from({ length: MAX_ACTIVE_SCIM_TOKENS + 5 }, (_, i) => create(initech, `token ${i}`)),
      );
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, MAX_ACTIVE_SCIM_TOKENS);
      const full = await rejection(create(initech, 'one more'));
      assert.deepEqual([full.code, full.reason], [status.FAILED_PRECONDITION, 'TOO_MANY_SCIM_TOKENS']);
      assert.match(full.message, /20 active SCIM tokens.*revoke one/);
      assert.ok((await create(globex, 'another organization')).token, 'the cap is per organization');
      const [oldest] = (await suite.organizationsIn(initech).listScimTokens({})).tokens;
      await suite.organizationsIn(initech).revokeScimToken({ id: oldest!.id, actor: 'user:x', requestId: '' });
      assert.ok((await create(initech, 'after a revocation')).token);
    });
  });

  describe('the provisioning trail', () => {
    test('pages newest first by (time, id), one organization only', async () => {
      const { organization } = await suite.organizations.createOrganization({ name: 'Hooli', alias: 'hooli' });
      const hooli = organization!.id;
      const audit = (operation: scimAuditV1.AuditOperation) => ({ actor: 'okta-hooli', operation, requestId: 'r' });
      const created: string[] = [];
      for (let i = 0; i < 5; i++) {
        const u = await suite.usersIn(hooli).createUser({
          user: user(),
          audit: audit(scimAuditV1.AuditOperation.AUDIT_OPERATION_CREATE),
        });
        created.push(u.user!.id);
      }
      const { token } = await create(hooli, 'hooli');
      const pages: usersV1.ListProvisioningEventsResponse[] = [];
      let page = await suite.usersIn(hooli).listProvisioningEvents({ limit: 2, beforeId: 0 });
      pages.push(page);
      while (page.hasMore) {
        const last = page.events.at(-1)!;
        page = await suite
          .usersIn(hooli)
          .listProvisioningEvents({ limit: 2, beforeTime: last.time!, beforeId: last.id });
        pages.push(page);
      }
      assert.deepEqual(
        pages.map((p) => p.events.length),
        [2, 2, 2],
      );
      const events = pages.flatMap((p) => p.events);
      assert.deepEqual(
        events.map((e) => [e.resourceType, e.resourceId, e.action]),
        [['ScimToken', token!.id, 'create'], ...[...created].reverse().map((id) => ['User', id, 'create'])],
      );
      const keys = events.map((e) => [timestampToMillis(e.time!), e.id] as const);
      for (let i = 1; i < keys.length; i++)
        assert.ok(keys[i - 1]![0] > keys[i]![0] || (keys[i - 1]![0] === keys[i]![0] && keys[i - 1]![1] > keys[i]![1]));
      assert.deepEqual([events.at(-1)!.actor, events[0]!.actor], ['okta-hooli', 'user:ErinAdmin1']);
      const demoEvents = (await suite.usersIn(DEMO).listProvisioningEvents({ limit: 1000, beforeId: 0 })).events;
      assert.ok(!demoEvents.some((e) => created.includes(e.resourceId) || e.resourceId === token!.id));
      for (const limit of [0, 1001])
        assert.equal((await rejection(suite.usersIn(hooli).listProvisioningEvents({ limit, beforeId: 0 }))).code, status.INVALID_ARGUMENT); // prettier-ignore
    });

    test('events of one millisecond page by id without loss or repetition', async () => {
      const { organization } = await suite.organizations.createOrganization({
        name: 'Pied Piper',
        alias: 'pied-piper',
      });
      const piper = organization!.id;
      // Seven entries written in one transaction share its now(): one time, told apart by id alone.
      const ids = await inOrganization(suite.runtime.knex, piper, async (trx) => {
        const rows = await trx('provisioning_audit')
          .insert(
            Array.from({ length: 7 }, (_, i) => ({
              user_id: `PiedPiper${i}`,
              actor: 'okta',
              operation: 'create',
            })),
          )
          .returning('id');
        return rows.map((r: { id: string }) => Number(r.id));
      });
      const seen: number[] = [];
      let before: { beforeTime?: usersV1.ScimToken['createTime']; beforeId: number } = { beforeId: 0 };
      for (;;) {
        const page = await suite.usersIn(piper).listProvisioningEvents({ limit: 3, ...before });
        seen.push(...page.events.map((e) => e.id));
        if (!page.hasMore) break;
        const last = page.events.at(-1)!;
        before = { beforeTime: last.time!, beforeId: last.id };
      }
      assert.deepEqual(seen, [...ids].reverse());
    });

    test('a page deep in a long trail is found through the index, under row-level security', async () => {
      const { organization } = await suite.organizations.createOrganization({ name: 'Umbrella', alias: 'umbrella' });
      const umbrella = organization!.id;
      await suite.admin.knex.raw(
        `INSERT INTO provisioning_audit (organization_id, occurred_at, actor, operation, user_id)
         SELECT ?, now() - g * interval '1 second', 'okta', 'patch', 'Umbrella01' FROM generate_series(1, 20000) g`,
        [umbrella],
      );
      await suite.admin.knex.raw('ANALYZE provisioning_audit');
      const [deep] = await suite.admin.knex('provisioning_audit').where({ organization_id: umbrella }).orderBy('id').offset(15000).limit(1); // prettier-ignore
      const statements: { sql: string; bindings: unknown[] }[] = [];
      const onQuery = (q: { sql: string; bindings: unknown[] }) => {
        if (q.sql.includes('ORDER BY occurred_at DESC')) statements.push(q);
      };
      suite.runtime.knex.on('query', onQuery);
      let page: usersV1.ListProvisioningEventsResponse;
      try {
        page = await suite.usersIn(umbrella).listProvisioningEvents({
          limit: 10,
          beforeTime: millisToTimestamp(new Date(deep.occurred_at).getTime()),
          beforeId: Number(deep.id),
        });
      } finally {
        suite.runtime.knex.off('query', onQuery);
      }
      assert.deepEqual(
        page.events.map((e) => e.id),
        Array.from({ length: 10 }, (_, i) => Number(deep.id) + 1 + i),
      );
      const [statement] = statements;
      const plan = await inOrganization(suite.runtime.knex, umbrella, async (trx) =>
        (await trx.raw(`EXPLAIN ${statement!.sql.replace(/\$\d+/g, '?')}`, statement!.bindings as never[])).rows
          .map((r: Record<string, string>) => r['QUERY PLAN'])
          .join('\n'),
      );
      assert.match(plan, /Index Cond: .*ROW\(occurred_at, id\) < ROW/, plan);
      assert.doesNotMatch(plan, /Seq Scan|Sort/, plan);
    });
  });

  describe('defence in depth: row-level security', () => {
    test('a query that drops its organization filter still sees only its organization; none declared: nothing', async () => {
      const mine = (await suite.usersIn(globex).createUser({ user: user() })).user!;
      await create(globex, 'wall');
      await suite.usersIn(DEMO).createUser({ user: user() });
      for (const table of ['users', 'scim_tokens', 'provisioning_audit']) {
        // The repository's statement without its `WHERE organization_id = ?`.
        const organizations = await inOrganization(
          suite.runtime.knex,
          globex,
          async (trx) =>
            (await trx.raw<{ rows: { organization_id: string }[] }>(`SELECT DISTINCT organization_id FROM ${table}`))
              .rows,
        );
        assert.deepEqual(organizations, [{ organization_id: String(globex) }], table);
        const everyone = await suite.admin.knex.raw<{ rows: unknown[] }>(
          `SELECT DISTINCT organization_id FROM ${table}`,
        );
        assert.ok(everyone.rows.length > 1, `${table}: the other organizations' rows are there`);
        const undeclared = await suite.runtime.knex.raw<{ rows: unknown[] }>(`SELECT * FROM ${table}`);
        assert.deepEqual(undeclared.rows, [], `${table}: a transaction that declared no organization sees nothing`);
      }
      const seen = await inOrganization(suite.runtime.knex, globex, (trx) => trx('users').select('id'));
      assert.ok(seen.some((r: { id: string }) => r.id === mine.id));
    });

    test("writes are held to the declared organization: another's rows are neither changed nor created", async () => {
      const theirs = (await suite.usersIn(DEMO).createUser({ user: user() })).user!;
      const changed = await inOrganization(suite.runtime.knex, globex, (trx) =>
        trx('users').update({ display_name: 'taken over' }).where({ id: theirs.id }),
      );
      assert.equal(changed, 0);
      await assert.rejects(
        inOrganization(suite.runtime.knex, globex, (trx) =>
          trx('users').insert({ id: 'Smuggled01', user_name: 'smuggled@example.com', organization_id: DEMO }),
        ),
        { code: '42501' }, // new row violates row-level security policy
      );
      // Without a declared organization an insert has no organization (the column's default) and is refused.
      await assert.rejects(suite.runtime.knex('users').insert({ id: 'Orphaned01', user_name: 'orphan@example.com' }), {
        code: '42501',
      });
    });

    test('the runtime role cannot switch row-level security off', async () => {
      const client = await suite.runtime.knex.client.acquireConnection();
      const run = (text: string) =>
        new Promise<string | undefined>((resolve) =>
          client.query(text, (err: { code?: string } | null) => resolve(err ? err.code : undefined)),
        );
      try {
        for (const statement of [
          'ALTER TABLE users DISABLE ROW LEVEL SECURITY',
          'ALTER TABLE users NO FORCE ROW LEVEL SECURITY',
          'DROP POLICY organization_isolation ON users',
          `CREATE POLICY everything ON users USING (true)`,
          'ALTER TABLE scim_tokens DISABLE ROW LEVEL SECURITY',
          'ALTER TABLE provisioning_audit NO FORCE ROW LEVEL SECURITY',
          `ALTER ROLE ${suite.roles.runtime.role} BYPASSRLS`,
        ])
          assert.equal(await run(statement), '42501', statement);
        // row_security = off does not bypass the policies: a query they would filter fails instead.
        assert.equal(await run('SET row_security = off'), undefined);
        assert.equal(await run('SELECT id FROM users'), '42501');
      } finally {
        await run('RESET row_security');
        await suite.runtime.knex.client.releaseConnection(client);
      }
    });
  });
});
