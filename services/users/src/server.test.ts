import { status, type ServiceError } from '@grpc/grpc-js';
import { filterV1, scimAuditV1, usersV1 } from '@mileage/proto';
import { decodeServiceError, HealthClient } from '@mileage/runtime/grpc';
import { inOrganization } from '@mileage/runtime/database';
import { timestampToMillis } from '@mileage/runtime/formats';
import { rejection } from '@mileage/runtime/testing';
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { filterToSql } from '@mileage/scim-domain';
import {
  LIVE_USERS_OF_ORGANIZATION,
  matchesAtMostOne,
  onStoredLowerCase,
  pageQuery,
  StatementNames,
  USER_FILTER_TABLE,
} from './users-repo';
import { user, usersSuite } from './users-suite.fixture';

const suite = usersSuite('users');
/** The calls of this file act inside the default organization (1, "Demo Org", seeded by the migrations). */
const DEMO = 1;
const demo = () => suite.usersIn(DEMO);

describe('UsersService over real gRPC and PostgreSQL', () => {
  test('migrations are idempotent and live in the users schema', async () => {
    const { applied } = await suite.admin.migrate();
    assert.deepEqual(applied, []);
    const { rows } = await suite.admin.knex.raw(
      `SELECT table_schema FROM information_schema.tables WHERE table_name = 'knex_migrations'`,
    );
    assert.deepEqual(
      rows.map((r: { table_schema: string }) => r.table_schema),
      ['users'],
    );
  });

  test('creates a user with a generated 10-character id and reads it back', async () => {
    const { user: created } = await demo().createUser({
      user: user({ userName: 'Erin@Example.com', displayName: 'Erin' }),
    });
    assert.match(created!.id, /^[A-Za-z0-9]{10}$/);
    assert.equal(created!.version, 1);
    assert.equal(created!.active, true);
    assert.ok(created!.createTime);
    const { user: read } = await demo().getUser({ id: created!.id, includeDeleted: false });
    assert.deepEqual(read, created);
  });

  test('keeps a valid id sent by the caller, and refuses it when taken', async () => {
    const { user: created } = await demo().createUser({ user: user({ id: 'Explicit01' }) });
    assert.equal(created!.id, 'Explicit01');
    const err = await rejection(demo().createUser({ user: user({ id: 'Explicit01' }) }));
    assert.equal(err.code, status.ALREADY_EXISTS);
    assert.equal(err.reason, 'USER_ID_TAKEN');
  });

  test('userName is unique case-insensitively', async () => {
    await demo().createUser({ user: user({ userName: 'frank@example.com' }) });
    const err = await rejection(demo().createUser({ user: user({ userName: 'FRANK@example.COM' }) }));
    assert.equal(err.code, status.ALREADY_EXISTS);
    assert.equal(err.reason, 'USER_NAME_TAKEN');
  });

  test('exactly one of many concurrent creates with one userName wins', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        demo().createUser({ user: user({ userName: i % 2 ? 'race@example.com' : 'RACE@example.com' }) }),
      ),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results) {
      if (r.status === 'rejected')
        assert.equal(decodeServiceError(r.reason as ServiceError).code, status.ALREADY_EXISTS);
    }
  });

  test('invalid input is refused with field violations and nothing is written', async () => {
    const before = await suite.admin.knex('users').count<{ count: string }[]>('* as count');
    const err = await rejection(
      demo().createUser({
        user: user({
          id: 'short',
          userName: '',
          timezone: 'Mars/Olympus',
          emails: [{ value: 'not-an-email', type: 'work', primary: true }],
        }),
      }),
    );
    assert.equal(err.code, status.INVALID_ARGUMENT);
    assert.deepEqual(err.fieldViolations.map((v) => v.field).sort(), [
      'emails[0].value',
      'id',
      'timezone',
      'user_name',
    ]);
    const afterCount = await suite.admin.knex('users').count<{ count: string }[]>('* as count');
    assert.deepEqual(afterCount, before);
  });

  test('the rules of the SCIM User declaration for emails: at most 10, at most one primary (SCIM reports the same)', async () => {
    const address = (i: number, primary = false) => ({ value: `a${i}@example.com`, type: 'work', primary });
    const tooMany = await rejection(
      demo().createUser({ user: user({ emails: Array.from({ length: 11 }, (_, i) => address(i)) }) }),
    );
    assert.deepEqual(tooMany.fieldViolations, [{ field: 'emails', description: 'at most 10 values' }]);
    const twoPrimaries = await rejection(
      demo().createUser({ user: user({ emails: [address(1, true), address(2, true)] }) }),
    );
    assert.deepEqual(twoPrimaries.fieldViolations, [{ field: 'emails', description: 'at most one primary value' }]);
  });

  test('unknown and malformed ids', async () => {
    assert.equal((await rejection(demo().getUser({ id: 'NoSuchUser', includeDeleted: false }))).code, status.NOT_FOUND);
    const malformed = await rejection(demo().getUser({ id: 'bad id!', includeDeleted: false }));
    assert.equal(malformed.code, status.INVALID_ARGUMENT);
    assert.equal(malformed.fieldViolations[0]?.field, 'id');
  });

  test('batch get returns found users once each, in request order', async () => {
    const a = (await demo().createUser({ user: user() })).user!;
    const b = (await demo().createUser({ user: user() })).user!;
    const { users } = await demo().batchGetUsers({ ids: [b.id, 'Missing123', a.id, b.id] });
    assert.deepEqual(
      users.map((u) => u.id),
      [b.id, a.id],
    );
    const tooMany = await rejection(demo().batchGetUsers({ ids: Array.from({ length: 1001 }, () => a.id) }));
    assert.equal(tooMany.code, status.INVALID_ARGUMENT);
  });

  test('batch get in the member view answers id, userName, displayName, formatted name and organization only, of live users', async () => {
    const shown = (
      await demo().createUser({
        user: user({ displayName: 'Shown Name', name: { givenName: 'S', familyName: 'N', formatted: 'S. N.' } }),
      })
    ).user!;
    const plain = (await demo().createUser({ user: user({ displayName: undefined }) })).user!;
    const gone = (await demo().createUser({ user: user() })).user!;
    await demo().deleteUser({ id: gone.id, expectedVersion: gone.version });
    const { users } = await demo().batchGetUsers({
      ids: [plain.id, gone.id, shown.id],
      view: usersV1.UserView.USER_VIEW_MEMBER,
    });
    const member = (u: usersV1.User) => ({
      ...usersV1.User.fromPartial({}),
      id: u.id,
      userName: u.userName,
      ...(u.displayName !== undefined ? { displayName: u.displayName } : {}),
      ...(u.name?.formatted !== undefined
        ? { name: { givenName: '', familyName: '', formatted: u.name.formatted } }
        : {}),
      organizationId: u.organizationId,
    });
    assert.deepEqual(users, [member(plain), member(shown)]);
    assert.equal(users[1]!.displayName, 'Shown Name');
    assert.equal(users[1]!.name?.formatted, 'S. N.');
    assert.equal(users[0]!.name, undefined);
    const { users: whole } = await demo().batchGetUsers({ ids: [shown.id], view: usersV1.UserView.USER_VIEW_FULL });
    assert.deepEqual(whole, [shown]);
  });

  test('batch get in the driver view answers what a driver shows (names, emails, active, time zone), of live users', async () => {
    const full = (
      await demo().createUser({
        user: user({
          displayName: 'Driven Name',
          name: { givenName: 'D', familyName: 'N', formatted: 'D. N.' },
          emails: [
            { value: 'other@example.com', type: 'home', primary: false },
            { value: 'work@example.com', type: 'work', primary: true },
          ],
          timezone: 'America/Chicago',
          externalId: 'ext-driven',
          enterprise: { employeeNumber: '42' },
          scimAttributes: { title: 'Driver' },
        }),
      })
    ).user!;
    const plain = (await demo().createUser({ user: user({ displayName: undefined, active: false }) })).user!;
    const gone = (await demo().createUser({ user: user() })).user!;
    await demo().deleteUser({ id: gone.id, expectedVersion: gone.version });
    const { users } = await demo().batchGetUsers({
      ids: [full.id, gone.id, plain.id],
      view: usersV1.UserView.USER_VIEW_DRIVER,
    });
    const driver = (u: usersV1.User) => ({
      ...usersV1.User.fromPartial({}),
      id: u.id,
      userName: u.userName,
      name: u.name,
      emails: u.emails,
      active: u.active,
      ...(u.displayName !== undefined ? { displayName: u.displayName } : {}),
      timezone: u.timezone,
      organizationId: u.organizationId,
    });
    assert.deepEqual(users, [driver(full), driver(plain)]);
    assert.equal(users[0]!.emails[1]!.value, 'work@example.com');
    assert.equal(users[0]!.timezone, 'America/Chicago');
    assert.equal(users[0]!.enterprise, undefined, 'no SCIM documents');
    assert.equal(users[0]!.createTime, undefined, 'no times');
    assert.equal(users[1]!.active, false);
    assert.equal(users[1]!.displayName, undefined);
  });

  test("a batch of userName lookups: one match per name that names a live user of the call's organization", async () => {
    const tag = Math.random().toString(36).slice(2, 8);
    const ann = (await demo().createUser({ user: user({ userName: `Ann.${tag}@Example.com` }) })).user!;
    const bob = (await demo().createUser({ user: user({ userName: `bob.${tag}@example.com` }) })).user!;
    const gone = (await demo().createUser({ user: user({ userName: `gone.${tag}@example.com` }) })).user!;
    await demo().deleteUser({ id: gone.id, expectedVersion: gone.version });
    const { organization } = await suite.organizations.createOrganization({ name: `Other ${tag}`, alias: `o-${tag}` });
    await suite.usersIn(organization!.id).createUser({ user: user({ userName: `carol.${tag}@example.com` }) });
    const names = [
      `BOB.${tag}@EXAMPLE.COM`,
      `nobody.${tag}@example.com`,
      `ann.${tag}@example.com`,
      `gone.${tag}@example.com`,
      `carol.${tag}@example.com`,
      `Bob.${tag}@example.com`,
    ];
    const { matches } = await demo().batchFindUsersByUserName({ userNames: names });
    // Case-insensitive, in request order, each name its own match; deleted users and other organizations' not found.
    assert.deepEqual(
      matches.map((m) => [m.index, m.user!.id]),
      [
        [0, bob.id],
        [2, ann.id],
        [5, bob.id],
      ],
    );
    // The same user as ListUsers' `userName eq` answers.
    const eq = (value: string): filterV1.Filter => ({
      expr: {
        $case: 'comparison',
        value: {
          attribute: 'userName',
          operator: filterV1.Operator.OPERATOR_EQ,
          value: { $case: 'stringValue', value },
        },
      },
    });
    const listed = await demo().listUsers({ filter: eq(names[2]!), offset: 0, limit: 1 });
    assert.deepEqual(matches[1]!.user, listed.users[0]);
    assert.deepEqual(await demo().batchFindUsersByUserName({ userNames: [] }), { matches: [] });
    const tooMany = await rejection(
      demo().batchFindUsersByUserName({ userNames: Array.from({ length: 1001 }, () => 'x') }),
    );
    assert.equal(tooMany.code, status.INVALID_ARGUMENT);
    const noOrganization = await rejection(suite.users.batchFindUsersByUserName({ userNames: [names[0]!] }));
    assert.equal(noOrganization.code, status.FAILED_PRECONDITION);
  });

  test('update bumps the version and honours expected_version', async () => {
    const created = (await demo().createUser({ user: user() })).user!;
    const { user: updated } = await demo().updateUser({
      user: { ...created, active: false, displayName: 'Renamed' },
      expectedVersion: 1,
    });
    assert.equal(updated!.version, 2);
    assert.equal(updated!.active, false);
    assert.equal(updated!.displayName, 'Renamed');
    assert.ok(timestampToMillis(updated!.updateTime!) >= timestampToMillis(created.updateTime!));
    const stale = await rejection(demo().updateUser({ user: { ...created, displayName: 'Lost' }, expectedVersion: 1 }));
    assert.equal(stale.code, status.ABORTED);
    const missing = await rejection(demo().updateUser({ user: { ...created, id: 'Nobody0000' }, expectedVersion: 0 }));
    assert.equal(missing.code, status.NOT_FOUND);
  });

  describe('ListUsers with SCIM filters', () => {
    const Op = filterV1.Operator;
    const cmp = (attribute: string, operator: filterV1.Operator, value?: string | boolean): filterV1.Filter => ({
      expr: {
        $case: 'comparison',
        value: {
          attribute,
          operator,
          ...(typeof value === 'string'
            ? { value: { $case: 'stringValue', value } }
            : typeof value === 'boolean'
              ? { value: { $case: 'boolValue', value } }
              : {}),
        },
      },
    });
    const and = (...filters: filterV1.Filter[]): filterV1.Filter => ({ expr: { $case: 'allOf', value: { filters } } });
    /** `emails[filter]`: the conditions must hold for one and the same address. */
    const someEmail = (filter: filterV1.Filter): filterV1.Filter => ({
      expr: { $case: 'valuePath', value: { attribute: 'emails', filter } },
    });
    const or = (...filters: filterV1.Filter[]): filterV1.Filter => ({ expr: { $case: 'anyOf', value: { filters } } });
    const not = (filter: filterV1.Filter): filterV1.Filter => ({ expr: { $case: 'not', value: filter } });
    let tag: string;
    const list = async (filter: filterV1.Filter) =>
      (
        await demo().listUsers({
          filter: and(cmp('externalId', Op.OPERATOR_SW, tag), filter),
          offset: 0,
          limit: 100,
        })
      ).users
        .map((u) => u.userName)
        .sort();

    before(async () => {
      tag = `flt${Math.random().toString(36).slice(2, 8)}`;
      const people = [
        {
          userName: `Grace.${tag}@Example.com`,
          given: 'Grace',
          active: true,
          emails: [
            { value: `grace.${tag}@work.example`, type: 'work', primary: true },
            { value: `g@home.example`, type: 'home', primary: false },
          ],
          dept: 'Sales',
        },
        {
          userName: `henry.${tag}@example.com`,
          given: 'Henry',
          active: false,
          emails: [{ value: `HENRY.${tag}@work.example`, type: 'work', primary: true }],
          dept: 'Ops',
        },
        { userName: `ivy_50%.${tag}@example.org`, given: 'Ivy', active: true, emails: [], dept: undefined },
      ];
      for (const [i, p] of people.entries()) {
        await demo().createUser({
          user: user({
            userName: p.userName,
            externalId: `${tag}-${i}`,
            name: { givenName: p.given, familyName: 'Filter' },
            active: p.active,
            emails: p.emails,
            ...(p.dept ? { enterprise: { department: p.dept } } : {}),
          }),
        });
      }
    });

    test('userName eq is case-insensitive; externalId and id are exact', async () => {
      assert.deepEqual(await list(cmp('USERNAME', Op.OPERATOR_EQ, `grace.${tag}@example.COM`)), [
        `Grace.${tag}@Example.com`,
      ]);
      assert.deepEqual(await list(cmp('externalId', Op.OPERATOR_EQ, `${tag.toUpperCase()}-0`)), []);
      assert.deepEqual(await list(cmp('externalId', Op.OPERATOR_EQ, `${tag}-1`)), [`henry.${tag}@example.com`]);
    });

    test('co / sw / ew treat % and _ literally; gt and le order strings', async () => {
      assert.deepEqual(await list(cmp('userName', Op.OPERATOR_CO, '_50%')), [`ivy_50%.${tag}@example.org`]);
      assert.deepEqual(await list(cmp('userName', Op.OPERATOR_CO, '_5_%')), []);
      assert.deepEqual(await list(cmp('userName', Op.OPERATOR_EW, '.ORG')), [`ivy_50%.${tag}@example.org`]);
      assert.deepEqual(await list(cmp('name.givenName', Op.OPERATOR_GT, 'h')), [
        `henry.${tag}@example.com`,
        `ivy_50%.${tag}@example.org`,
      ]);
      assert.deepEqual(await list(cmp('name.givenName', Op.OPERATOR_LE, 'GRACE')), [`Grace.${tag}@Example.com`]);
    });

    test('and / or / not, booleans, presence and e-mail value paths', async () => {
      assert.deepEqual(await list(cmp('active', Op.OPERATOR_EQ, false)), [`henry.${tag}@example.com`]);
      assert.deepEqual(await list(not(cmp('active', Op.OPERATOR_EQ, false))), [
        `Grace.${tag}@Example.com`,
        `ivy_50%.${tag}@example.org`,
      ]);
      assert.deepEqual(await list(cmp('emails', Op.OPERATOR_PR)), [
        `Grace.${tag}@Example.com`,
        `henry.${tag}@example.com`,
      ]);
      assert.deepEqual(await list(cmp('emails.value', Op.OPERATOR_EQ, `henry.${tag}@WORK.example`)), [
        `henry.${tag}@example.com`,
      ]);
      const workAtHome = someEmail(and(cmp('type', Op.OPERATOR_EQ, 'work'), cmp('value', Op.OPERATOR_SW, 'g@')));
      assert.deepEqual(await list(workAtHome), [], 'the two conditions must hold for the same address');
      const homeG = someEmail(and(cmp('type', Op.OPERATOR_EQ, 'HOME'), cmp('value', Op.OPERATOR_SW, 'g@')));
      assert.deepEqual(await list(homeG), [`Grace.${tag}@Example.com`]);
      assert.deepEqual(
        await list(
          or(
            cmp('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', Op.OPERATOR_EQ, 'ops'),
            cmp('name.givenName', Op.OPERATOR_EQ, 'ivy'),
          ),
        ),
        [`henry.${tag}@example.com`, `ivy_50%.${tag}@example.org`],
      );
      assert.deepEqual(await list(cmp('meta.created', Op.OPERATOR_GT, '2000-01-01T00:00:00Z')), [
        `Grace.${tag}@Example.com`,
        `henry.${tag}@example.com`,
        `ivy_50%.${tag}@example.org`,
      ]);
    });

    test('pages by id with the total, and refuses unknown attributes and type mismatches', async () => {
      const filter = cmp('externalId', Op.OPERATOR_SW, tag);
      const first = await demo().listUsers({ filter, offset: 0, limit: 2 });
      const rest = await demo().listUsers({ filter, offset: 2, limit: 2 });
      assert.equal(first.totalSize, 3);
      assert.equal(rest.totalSize, 3);
      const ids = [...first.users, ...rest.users].map((u) => u.id);
      assert.deepEqual(ids, [...ids].sort());
      assert.equal(new Set(ids).size, 3);
      for (const bad of [
        cmp('password', Op.OPERATOR_EQ, 'x'),
        cmp('active', Op.OPERATOR_GT, true),
        cmp('active', Op.OPERATOR_EQ, 'yes'),
        cmp('meta.created', Op.OPERATOR_GT, 'yesterday'),
      ]) {
        const err = await rejection(demo().listUsers({ filter: bad, offset: 0, limit: 10 }));
        assert.equal(err.code, status.INVALID_ARGUMENT);
        assert.equal(err.reason, 'INVALID_FILTER');
      }
      assert.equal((await rejection(demo().listUsers({ offset: 0, limit: 1001 }))).code, status.INVALID_ARGUMENT);
    });

    test('a lookup prepared by name answers with its own values every time, past the switch to a generic plan', async () => {
      // PostgreSQL plans a named statement for its values five times, then may keep one generic plan: the rounds
      // below go past that on every connection the pool uses, and each lookup must still find its own user.
      const names = [`Grace.${tag}@Example.com`, `henry.${tag}@example.com`, `ivy_50%.${tag}@example.org`];
      for (let round = 0; round < 12; round++) {
        for (const name of names) {
          const found = await demo().listUsers({
            filter: cmp('userName', Op.OPERATOR_EQ, name),
            offset: 0,
            limit: 100,
          });
          assert.equal(found.totalSize, 1);
          assert.deepEqual(
            found.users.map((u) => u.userName),
            [name],
          );
        }
        const none = await demo().listUsers({ filter: cmp('userName', Op.OPERATOR_EQ, `nobody.${tag}`), offset: 0, limit: 100 }); // prettier-ignore
        assert.deepEqual([none.totalSize, none.users], [0, []]);
      }
    });

    test('a lookup on a unique attribute is one statement; its count is the page, at every offset and limit', async () => {
      assert.ok(matchesAtMostOne(cmp('userName', Op.OPERATOR_EQ, 'a')));
      assert.ok(matchesAtMostOne(cmp('ID', Op.OPERATOR_EQ, 'a')));
      assert.ok(!matchesAtMostOne(cmp('userName', Op.OPERATOR_NE, 'a')));
      assert.ok(!matchesAtMostOne(cmp('userName', Op.OPERATOR_SW, 'a')));
      assert.ok(!matchesAtMostOne(cmp('userName', Op.OPERATOR_PR)));
      assert.ok(matchesAtMostOne(cmp('externalId', Op.OPERATOR_EQ, 'a')), 'externalId is unique per organization');
      assert.ok(!matchesAtMostOne(and(cmp('userName', Op.OPERATOR_EQ, 'a'), cmp('active', Op.OPERATOR_EQ, true))));
      assert.ok(!matchesAtMostOne(undefined));

      const name = `Grace.${tag}@Example.com`;
      const byName = cmp('userName', Op.OPERATOR_EQ, name.toUpperCase());
      const statements: string[] = [];
      const onQuery = (q: { sql: string }) => {
        if (q.sql.includes('FROM users WHERE')) statements.push(q.sql);
      };
      suite.runtime.knex.on('query', onQuery);
      let found: usersV1.ListUsersResponse;
      try {
        found = await demo().listUsers({ filter: byName, offset: 0, limit: 100 });
      } finally {
        suite.runtime.knex.off('query', onQuery);
      }
      assert.equal(statements.length, 1, statements.join('\n'));
      assert.equal(found.totalSize, 1);
      assert.deepEqual(
        found.users.map((u) => u.userName),
        [name],
      );
      const byId = await demo().listUsers({
        filter: cmp('id', Op.OPERATOR_EQ, found.users[0]!.id),
        offset: 0,
        limit: 1,
      });
      assert.deepEqual([byId.totalSize, byId.users.map((u) => u.userName)], [1, [name]]);
      // Past the first page, or with no page at all, the count is still the number of matches (its own statement).
      for (const [offset, limit] of [
        [1, 100],
        [0, 0],
        [5, 0],
      ] as const) {
        const page = await demo().listUsers({ filter: byName, offset, limit });
        assert.deepEqual([page.totalSize, page.users], [1, []], `offset ${offset}, limit ${limit}`);
      }
      const miss = await demo().listUsers({ filter: cmp('userName', Op.OPERATOR_EQ, `nobody.${tag}`), offset: 0, limit: 1 }); // prettier-ignore
      assert.deepEqual([miss.totalSize, miss.users], [0, []]);
    });

    test('identity-provider lookups are index scans at volume', async () => {
      // 20,000 extra rows make a sequential scan visible in the plan; ANALYZE gives the planner real statistics.
      await suite.admin.knex.raw(`
        INSERT INTO users (organization_id, id, user_name, emails, display_name, external_id)
        SELECT ${DEMO}, 'Plan' || lpad(g::text, 6, '0'), 'plan' || g || '@example.com',
               jsonb_build_array(jsonb_build_object('value', 'plan' || g || '@mail.example', 'type', 'work', 'primary', true)),
               'Plan ' || g, 'plan-' || g
          FROM generate_series(1, 20000) g`);
      await suite.admin.knex.raw('ANALYZE users');
      const lookups: [string, string][] = [
        ['userName', 'PLAN77@example.com'],
        ['externalId', 'plan-77'],
        ['id', 'Plan000077'],
        ['emails.value', 'Plan77@Mail.example'],
        ['displayName', 'plan 77'],
      ];
      const valuePath = someEmail(
        and(cmp('type', Op.OPERATOR_EQ, 'work'), cmp('value', Op.OPERATOR_EQ, 'plan77@mail.example')),
      );
      const filters: [string, filterV1.Filter][] = [
        ...lookups.map(([a, v]): [string, filterV1.Filter] => [a, cmp(a, Op.OPERATOR_EQ, v)]),
        ['emails[type eq work and value eq …]', valuePath],
      ];
      for (const [attribute, filter] of filters) {
        const condition = onStoredLowerCase(filterToSql(filter, USER_FILTER_TABLE));
        // The statement ListUsers runs for a page of a few matches, and the count before it, as the service runs them
        // (its role, under row-level security).
        const where = `${LIVE_USERS_OF_ORGANIZATION} AND ${condition.sql}`;
        const rows = await inOrganization(suite.runtime.knex, DEMO, async (trx) => [
          ...(await trx.raw(`EXPLAIN ${pageQuery(where, 1)}`, [DEMO, ...condition.bindings, 100, 0])).rows,
          ...(await trx.raw(`EXPLAIN SELECT count(*) FROM users WHERE ${where}`, [DEMO, ...condition.bindings])).rows,
        ]);
        const plan = rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
        assert.doesNotMatch(plan, /Seq Scan/, `${attribute} eq: ${plan}`);
        const found = await demo().listUsers({ filter, offset: 0, limit: 10 });
        assert.deepEqual(
          found.users.map((u) => u.id),
          ['Plan000077'],
          attribute,
        );
      }
    });
  });

  test('list statements get one stable name per text, until the cap; then they go unnamed', () => {
    const names = new StatementNames('t_', 2);
    const a = names.nameOf('SELECT 1');
    assert.match(a!, /^t_[0-9a-f]{24}$/);
    assert.equal(names.nameOf('SELECT 1'), a);
    const b = names.nameOf('SELECT 2');
    assert.ok(b && b !== a);
    assert.equal(names.nameOf('SELECT 3'), undefined);
    assert.equal(names.nameOf('SELECT 2'), b, 'a named text keeps its name after the cap');
    assert.equal(new StatementNames('t_', 2).nameOf('SELECT 1'), a, 'the name follows from the text alone');
  });

  test('delete deactivates, hides the user and frees the userName; the id stays taken', async () => {
    const created = (await demo().createUser({ user: user({ userName: 'leaver@example.com' }) })).user!;
    const stale = await rejection(demo().deleteUser({ id: created.id, expectedVersion: 9 }));
    assert.equal(stale.code, status.ABORTED);
    const { user: deleted } = await demo().deleteUser({
      id: created.id,
      expectedVersion: created.version,
    });
    assert.equal(deleted!.active, false);
    assert.ok(deleted!.deleteTime);
    assert.equal((await rejection(demo().getUser({ id: created.id, includeDeleted: false }))).code, status.NOT_FOUND);
    assert.equal((await rejection(demo().deleteUser({ id: created.id, expectedVersion: 0 }))).code, status.NOT_FOUND);
    const again = (await demo().createUser({ user: user({ userName: 'LEAVER@example.com' }) })).user!;
    assert.notEqual(again.id, created.id);
    assert.equal((await rejection(demo().createUser({ user: user({ id: created.id }) }))).code, status.ALREADY_EXISTS);
  });

  test('user.deactivated is recorded in the transaction that makes an active user inactive, once', async () => {
    const events = async (id: string) =>
      (await suite.admin
        .knex('outbox')
        .select('event_type', 'group_id', 'user_id', 'payload')
        .where({ user_id: id })) as {
        event_type: string;
        group_id: string | null;
        user_id: string;
        payload: unknown;
      }[];
    const a = (await demo().createUser({ user: user() })).user!;
    const renamed = (await demo().updateUser({ user: { ...a, displayName: 'Still here' }, expectedVersion: 0 })).user!;
    assert.deepEqual(await events(a.id), [], 'an update that keeps the user active');
    const stale = await rejection(demo().updateUser({ user: { ...a, active: false }, expectedVersion: a.version }));
    assert.equal(stale.code, status.ABORTED);
    assert.deepEqual(await events(a.id), [], 'a refused write records nothing');
    const off = (await demo().updateUser({ user: { ...renamed, active: false }, expectedVersion: 0 })).user!;
    assert.deepEqual(await events(a.id), [
      { event_type: 'user.deactivated', group_id: null, user_id: a.id, payload: { user_id: a.id } },
    ]);
    await demo().updateUser({ user: { ...off, displayName: 'Inactive still' }, expectedVersion: 0 });
    await demo().deleteUser({ id: a.id, expectedVersion: 0 });
    assert.equal((await events(a.id)).length, 1, 'already inactive: no second event');

    const b = (await demo().createUser({ user: user() })).user!;
    await demo().deleteUser({ id: b.id, expectedVersion: 0 });
    assert.deepEqual(
      (await events(b.id)).map((e) => e.event_type),
      ['user.deactivated'],
      'deleting an active user deactivates them',
    );
    const c = (await demo().createUser({ user: user({ active: false }) })).user!;
    await demo().deleteUser({ id: c.id, expectedVersion: 0 });
    assert.deepEqual(await events(c.id), [], 'created inactive: never deactivated');
  });

  test('SCIM attributes the platform does not model are stored with the user and change with its version', async () => {
    const scimAttributes = {
      title: 'Fleet manager',
      phoneNumbers: [{ value: '+1 555 0100', type: 'work' }],
      name: { middleName: 'Q' },
    };
    const created = (await demo().createUser({ user: user({ userName: 'attrs@example.com', scimAttributes }) })).user!;
    assert.deepEqual(created.scimAttributes, scimAttributes);
    const updated = (
      await demo().updateUser({ user: { ...created, scimAttributes: { title: 'Driver' } }, expectedVersion: 1 })
    ).user!;
    assert.equal(updated.version, 2);
    assert.deepEqual((await demo().getUser({ id: created.id, includeDeleted: false })).user!.scimAttributes, {
      title: 'Driver',
    });
    const cleared = (await demo().updateUser({ user: { ...updated, scimAttributes: {} }, expectedVersion: 2 })).user!;
    assert.equal(cleared.scimAttributes, undefined, 'no attributes are stored as none');
  });

  test('a write with an audit entry records it in the same transaction; a refused write records none', async () => {
    const audit = (operation: scimAuditV1.AuditOperation, extra: Partial<scimAuditV1.ProvisioningAudit> = {}) => ({
      actor: 'okta',
      operation,
      requestId: 'req-1',
      ...extra,
    });
    const entries = async (id: string) =>
      (await suite.admin.knex('provisioning_audit').where({ user_id: id }).orderBy('id')) as {
        operation: string;
        version: string;
        actor: string;
        request_id: string;
        before: unknown;
        after: unknown;
      }[];
    const created = (
      await demo().createUser({
        user: user({ userName: 'audited@example.com' }),
        audit: audit(scimAuditV1.AuditOperation.AUDIT_OPERATION_CREATE, { after: { userName: 'audited@example.com' } }),
      })
    ).user!;
    await demo().updateUser({
      user: { ...created, displayName: 'Audited' },
      expectedVersion: 1,
      audit: audit(scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH, { before: { v: 1 }, after: { v: 2 } }),
    });
    const stale = await rejection(
      demo().updateUser({
        user: { ...created, displayName: 'Stale' },
        expectedVersion: 1,
        audit: audit(scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH),
      }),
    );
    assert.equal(stale.code, status.ABORTED);
    await demo().deleteUser({
      id: created.id,
      expectedVersion: 2,
      audit: audit(scimAuditV1.AuditOperation.AUDIT_OPERATION_DELETE, { before: { v: 2 } }),
    });
    const rows = await entries(created.id);
    assert.deepEqual(
      rows.map((r) => [r.operation, Number(r.version), r.actor, r.request_id]),
      [
        ['create', 1, 'okta', 'req-1'],
        ['patch', 2, 'okta', 'req-1'],
        ['delete', 3, 'okta', 'req-1'],
      ],
    );
    assert.deepEqual(rows[1]!.before, { v: 1 });
    assert.deepEqual(rows[1]!.after, { v: 2 });
    assert.equal(rows[2]!.after, null);
    // An audit entry without actor or operation is refused, and the write with it.
    const bad = await rejection(
      demo().createUser({
        user: user({ userName: 'unaudited@example.com' }),
        audit: { actor: '', operation: 0, requestId: '' },
      }),
    );
    assert.equal(bad.code, status.INVALID_ARGUMENT);
    assert.equal((await suite.admin.knex('users').where({ user_name: 'unaudited@example.com' })).length, 0);
    await assert.rejects(suite.admin.knex('provisioning_audit').where({ user_id: created.id }).delete(), /append-only/);
  });

  test("a write under an attestation nonce another write took is refused, and changes nothing (a replay's defence)", async () => {
    const audit = (operation: scimAuditV1.AuditOperation, attestationNonce: string) => ({
      actor: 'okta',
      operation,
      requestId: 'req-nonce',
      attestationNonce,
    });
    const created = (
      await demo().createUser({
        user: user({ userName: 'nonce@example.com' }),
        audit: audit(scimAuditV1.AuditOperation.AUDIT_OPERATION_CREATE, 'nonce-of-the-create-000'),
      })
    ).user!;
    // The same write's nonce again (a captured SCIM request replayed to another SCIM replica): refused.
    const replayed = await rejection(
      demo().updateUser({
        user: { ...created, displayName: 'Replayed' },
        expectedVersion: created.version,
        audit: audit(scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH, 'nonce-of-the-create-000'),
      }),
    );
    assert.equal(replayed.code, status.ALREADY_EXISTS);
    assert.equal(replayed.reason, 'ATTESTATION_REPLAYED');
    const now = (await demo().getUser({ id: created.id, includeDeleted: false })).user!;
    assert.equal(now.displayName, created.displayName, 'the write and its audit entry were undone together');
    assert.equal(now.version, created.version);
    // Another nonce, and a write without one (a v1 attestation, or not SCIM): taken.
    await demo().updateUser({
      user: { ...created, displayName: 'Patched' },
      expectedVersion: created.version,
      audit: audit(scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH, 'nonce-of-the-patch-0000'),
    });
    await demo().updateUser({
      user: { ...created, displayName: 'Patched again' },
      expectedVersion: created.version + 1,
      audit: { actor: 'okta', operation: scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH, requestId: 'r' },
    });
    const nonces = await suite.admin.knex('provisioning_audit').where({ user_id: created.id }).orderBy('id');
    assert.deepEqual(
      nonces.map((r: { attestation_nonce: string | null }) => r.attestation_nonce),
      ['nonce-of-the-create-000', 'nonce-of-the-patch-0000', null],
    );
  });

  test('the standard health service answers SERVING', async () => {
    const health = new HealthClient(suite.address);
    try {
      assert.equal(await health.check(''), true);
      assert.equal(await health.check('mileage.users.v1.UsersService'), true);
      assert.equal(await health.check('mileage.users.v1.OrganizationsService'), true);
      assert.equal(await health.check('no.such.Service'), false);
    } finally {
      health.close();
    }
  });
});
