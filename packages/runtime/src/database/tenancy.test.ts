// Who row-level security applies to, against the run's real PostgreSQL: not to the superuser the tests connect as,
// and to a role that owns nothing, as a service's runtime role is.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import pg from 'pg';
import knexFactory from 'knex';
import { createDatabase, type Database } from './db';
import { declaresOnBegin } from './declaring-client';
import { AppError } from '../grpc/errors';
import { Metrics } from '../telemetry/metrics';
import { organizationLimits } from './organization-share';
import {
  acrossOrganizations,
  COSTLY_READ,
  inOrganization,
  organizationIsolationStatements,
  readAcrossOrganizations,
  readInOrganization,
  roleBypassingPolicies,
  snapshotInOrganization,
  statementsOf,
} from './tenancy';
import { joinSnapshot, positionalText, shareSnapshot } from './joined-snapshot';
import { createSchemaRoles, createTestDatabase, type SchemaRoles } from '../testing';

let roles: SchemaRoles;
let testUrl: string;
let superuser: Database;
let runtime: Database;

before(async () => {
  const testDb = await createTestDatabase('tenancy');
  testUrl = testDb.url;
  roles = await createSchemaRoles(testDb, 'tenancy');
  const open = (url: string) =>
    createDatabase({
      url,
      schema: 'tenancy',
      migrationsDirectory: path.join(__dirname, 'no-migrations'),
      applicationName: 'tenancy-test',
    });
  superuser = open(testDb.url);
  runtime = open(roles.urlOf(roles.runtime));
  // A tenant table as a migration makes one; the runtime role reads and writes it under the policy.
  await superuser.knex.raw('CREATE TABLE IF NOT EXISTS facts (id int PRIMARY KEY, organization_id bigint NOT NULL)');
  for (const statement of organizationIsolationStatements('facts')) await superuser.knex.raw(statement);
  await superuser.knex.raw('INSERT INTO facts VALUES (1, 1), (2, 2), (3, 2) ON CONFLICT DO NOTHING');
  await superuser.knex.raw(`GRANT USAGE ON SCHEMA tenancy TO ${roles.runtime.role}`);
  await superuser.knex.raw(`GRANT SELECT, INSERT ON facts TO ${roles.runtime.role}`);
});

after(async () => {
  await superuser?.close();
  await runtime?.close();
  await roles?.drop();
});

test('a superuser is named as bypassing the policies, a role that owns nothing is not', async () => {
  assert.equal(typeof (await roleBypassingPolicies(superuser.knex)), 'string');
  assert.equal(await roleBypassingPolicies(runtime.knex), undefined);
});

const ids = (rows: { id: number }[]) => rows.map((r) => r.id).sort();

test('a light read sees the declared organization only; across organizations, every one', async () => {
  const all = 'SELECT id FROM facts ORDER BY id';
  assert.deepEqual(ids((await readInOrganization(runtime.knex, 2, (run) => run<{ id: number }>(all))).rows), [2, 3]);
  assert.deepEqual(
    ids((await readInOrganization(runtime.knex, 1, (run) => run<{ id: number }>(all, [], 'f1'))).rows),
    [1],
  );
  assert.deepEqual(
    ids((await readAcrossOrganizations(runtime.knex, (run) => run<{ id: number }>(all))).rows),
    [1, 2, 3],
  );
  // The same read inside a knex transaction, through its own connection.
  const inTrx = await inOrganization(runtime.knex, 2, async (trx) => (await statementsOf(trx))<{ id: number }>(all));
  assert.deepEqual(ids(inTrx.rows), [2, 3]);
  // knex placeholders, bindings, a named (prepared) statement reused with other values.
  const byId = 'SELECT id FROM facts WHERE id = ANY(?::int[]) AND organization_id = ?';
  const named = (org: number, wanted: number[]) =>
    readInOrganization(runtime.knex, org, async (run) =>
      ids((await run<{ id: number }>(byId, [wanted, org], 'f2')).rows),
    );
  assert.deepEqual(await named(2, [1, 2, 3]), [2, 3]);
  assert.deepEqual(await named(1, [1, 2, 3]), [1]);
  // Outside any declaration the same connection pool finds nothing: the setting did not outlive its transaction.
  assert.deepEqual((await runtime.knex.raw(all)).rows, []);
});

test("a light read's statement parses its columns with the parsers it is given, and only that statement", async () => {
  const INT4_OID = 23;
  const tagged = { getTypeParser: (oid: number) => (text: string) => (oid === INT4_OID ? `int:${text}` : text) };
  const byId = 'SELECT id FROM facts WHERE id = ?';
  const [parsed, plain] = await readInOrganization(runtime.knex, 1, async (run) => [
    (await run<{ id: unknown }>(byId, [1], 'f3', tagged)).rows,
    (await run<{ id: unknown }>(byId, [1], 'f3')).rows,
  ]);
  assert.deepEqual(parsed, [{ id: 'int:1' }]);
  assert.deepEqual(plain, [{ id: 1 }]);
});

/** With one pooled connection or ten, every later statement runs outside a transaction and sees no organization. */
async function assertNothingLeftOpen() {
  for (let i = 0; i < 12; i++) {
    const { rows } = await runtime.knex.raw<{ rows: { open: boolean; declared: string | null }[] }>(
      "SELECT now() <> statement_timestamp() AS open, current_setting('mileage.organization_id', true) AS declared",
    );
    assert.equal(rows[0]!.open, false);
    assert.ok(!rows[0]!.declared);
  }
  // And the refused write (id 9) is not there.
  assert.equal((await superuser.knex.raw('SELECT count(*)::int AS n FROM facts WHERE id = 9')).rows[0].n, 0);
}

test('a light read is read only, and a failed one leaves its connection outside any transaction', async () => {
  const write = readInOrganization(runtime.knex, 1, (run) => run('INSERT INTO facts VALUES (9, 1)'));
  await assert.rejects(write, /read-only transaction/);
  await assert.rejects(readInOrganization(runtime.knex, 1, (run) => run('SELECT * FROM no_such_table')));
  await assertNothingLeftOpen();
  assert.throws(() => readInOrganization(runtime.knex, 0, async () => 0), /not an organization id/);
});

test('inOrganization declares its organization with BEGIN where the client can, in a statement of its own otherwise', async () => {
  const all = 'SELECT id FROM facts ORDER BY id';
  const statements: string[] = [];
  const record = (q: { sql: string }) => statements.push(q.sql);
  assert.ok(declaresOnBegin(runtime.knex), "createDatabase's client begins with the declaration");
  runtime.knex.on('query', record);
  try {
    const { rows } = await inOrganization(runtime.knex, 2, (trx) => trx.raw<{ rows: { id: number }[] }>(all));
    assert.deepEqual(ids(rows), [2, 3]);
  } finally {
    runtime.knex.off('query', record);
  }
  assert.ok(!statements.some((text) => /^SELECT set_config/.test(text)), statements.join('\n'));
  // A knex of knex's own client: the same transaction, the declaration one statement more.
  const plain = knexFactory({ client: 'pg', connection: roles.urlOf(roles.runtime), searchPath: ['tenancy'] });
  try {
    assert.ok(!declaresOnBegin(plain));
    const { rows } = await inOrganization(plain, 2, (trx) => trx.raw<{ rows: { id: number }[] }>(all));
    assert.deepEqual(ids(rows), [2, 3]);
    const across = await acrossOrganizations(plain, (trx) => trx.raw<{ rows: { id: number }[] }>(all));
    assert.deepEqual(ids(across.rows), [1, 2, 3]);
  } finally {
    await plain.destroy();
  }
  const across = await acrossOrganizations(runtime.knex, (trx) => trx.raw<{ rows: { id: number }[] }>(all));
  assert.deepEqual(ids(across.rows), [1, 2, 3]);
});

/** A pg connection as the pool hands it out, whose answers the test releases: what a light read writes, and when. */
function scriptedConnection(answers: Record<string, () => Promise<{ rows: unknown[] }>>) {
  const sent: { text: string; beginAnswered: boolean }[] = [];
  let beginAnswered = false;
  const connection = {
    query({ text }: { text: string }) {
      sent.push({ text, beginAnswered });
      const key = Object.keys(answers).find((prefix) => text.startsWith(prefix));
      const answer = key ? answers[key]!() : Promise.resolve({ rows: [] });
      return text.startsWith('BEGIN') ? answer.finally(() => (beginAnswered = true)) : answer;
    },
  };
  let released = 0;
  const knex = {
    client: {
      pool: { max: 1 },
      acquireConnection: () => Promise.resolve(connection),
      releaseConnection: () => Promise.resolve(released++),
      positionBindings: (text: string) => text,
      emit: () => true,
    },
  } as unknown as knexFactory.Knex;
  return { knex, sent, released: () => released };
}

test("a light read's first statement is written behind its BEGIN, not after BEGIN's answer", async () => {
  let answerBegin!: () => void;
  const begin = new Promise<{ rows: unknown[] }>((resolve) => (answerBegin = () => resolve({ rows: [] })));
  const { knex, sent, released } = scriptedConnection({ BEGIN: () => begin });
  const read = readInOrganization(knex, 7, (run) => run('SELECT id FROM facts WHERE id = ?', [1]));
  await new Promise(setImmediate);
  assert.deepEqual(
    sent.map(({ text, beginAnswered }) => [text.split(';')[0], beginAnswered]),
    [
      ['BEGIN READ ONLY', false],
      ['SELECT id FROM facts WHERE id = ?', false],
    ],
  );
  answerBegin();
  await read;
  assert.equal(sent.at(-1)?.text, 'COMMIT');
  assert.equal(released(), 1);
});

test("a one-statement read writes its COMMIT behind its statement, before BEGIN's answer: one round trip", async () => {
  let answerBegin!: () => void;
  const begin = new Promise<{ rows: unknown[] }>((resolve) => (answerBegin = () => resolve({ rows: [] })));
  const { knex, sent, released } = scriptedConnection({ BEGIN: () => begin });
  const read = readInOrganization(knex, 7, (run) => run('SELECT id FROM facts WHERE id = ?', [1]), {
    oneStatement: true,
  });
  await new Promise(setImmediate);
  assert.deepEqual(
    sent.map(({ text, beginAnswered }) => [text.split(';')[0], beginAnswered]),
    [
      ['BEGIN READ ONLY', false],
      ['SELECT id FROM facts WHERE id = ?', false],
      ['COMMIT', false],
    ],
  );
  answerBegin();
  await read;
  assert.equal(sent.length, 3, 'no second COMMIT');
  assert.equal(released(), 1);
});

test('a one-statement read sees its organization, refuses a second statement and leaves no transaction open', async () => {
  const all = 'SELECT id FROM facts ORDER BY id';
  const one = { oneStatement: true };
  const read = (organization: number) =>
    readInOrganization(runtime.knex, organization, (run) => run<{ id: number }>(all), one);
  assert.deepEqual(ids((await read(2)).rows), [2, 3]);
  assert.deepEqual(ids((await read(1)).rows), [1]);
  assert.deepEqual(
    ids((await readAcrossOrganizations(runtime.knex, (run) => run<{ id: number }>(all), one)).rows),
    [1, 2, 3],
  );
  const twice = readInOrganization(runtime.knex, 2, async (run) => [await run(all), await run(all)], one);
  await assert.rejects(twice, /a one-statement read ran a second statement/);
  await assert.rejects(readInOrganization(runtime.knex, 1, (run) => run('SELECT * FROM no_such_table'), one));
  await assert.rejects(readInOrganization(runtime.knex, 1, (run) => run('INSERT INTO facts VALUES (9, 1)'), one));
  await assertNothingLeftOpen();
});

test('a light read whose BEGIN failed fails, though its statement answered (it saw no organization)', async () => {
  const { knex, sent, released } = scriptedConnection({
    BEGIN: () => Promise.reject(new Error('begin refused')),
    SELECT: () => Promise.resolve({ rows: [] }),
  });
  await assert.rejects(
    readInOrganization(knex, 7, (run) => run('SELECT id FROM facts')),
    /begin refused/,
  );
  assert.deepEqual(
    sent.map((s) => s.text.split(';')[0]),
    ['BEGIN READ ONLY', 'SELECT id FROM facts', 'ROLLBACK'],
  );
  assert.equal(released(), 1);
});

test("the pool's connections pipeline (so that the BEGIN and the statement share a round trip)", async () => {
  const connection = (await (
    runtime.knex.client as { acquireConnection(): Promise<{ pipeline?: unknown }> }
  ).acquireConnection()) as { pipeline?: unknown };
  try {
    assert.equal(connection.pipeline, true);
  } finally {
    await (runtime.knex.client as { releaseConnection(c: unknown): Promise<unknown> }).releaseConnection(connection);
  }
});

describe("an organization's share of a real pool (organization-share.ts)", () => {
  let shared: Database;
  let lockHolder: pg.Client;
  const metrics = new Metrics('tenancy-share-test');
  /** Statements that wait until the test lets them go: the lock a test holds, taken shared inside the read. */
  const LOCK = 4141;
  const blocked = "SELECT pg_advisory_xact_lock_shared(4141), current_setting('mileage.organization_id', true) AS org";
  const organizationOf = "SELECT current_setting('mileage.organization_id', true) AS org";

  before(async () => {
    shared = createDatabase({
      url: testUrl,
      schema: 'tenancy',
      migrationsDirectory: path.join(__dirname, 'no-migrations'),
      applicationName: 'tenancy-share-test',
      poolMax: 4,
      statementTimeoutMs: 5_000,
      costlyStatementTimeoutMs: 150,
      metrics,
      organizationShare: { perOrganization: 2, reserved: 1, waitMs: 100 },
    });
    lockHolder = new pg.Client({ connectionString: testUrl });
    await lockHolder.connect();
  });

  after(async () => {
    await lockHolder?.end();
    await shared?.close();
  });

  test("a flood of one organization's reads leaves another's reads and the reads across organizations their connections", async () => {
    const share = organizationLimits(shared.knex)!.share!;
    await lockHolder.query('SELECT pg_advisory_lock($1)', [LOCK]);
    let released = false;
    try {
      const flood = Array.from({ length: 8 }, () =>
        readInOrganization(shared.knex, 1, (run) => run<{ org: string }>(blocked)),
      );
      flood.forEach((p) => p.catch(() => undefined));
      // Two hold their share of the pool (blocked in PostgreSQL on the lock); six wait for a place.
      assert.equal(share.inUse(1), 2);
      assert.equal(share.waiters, 6);

      // Answered while organization 1's reads still hold their connections.
      const other = await readInOrganization(shared.knex, 2, (run) => run<{ org: string }>(organizationOf));
      assert.deepEqual(other.rows, [{ org: '2' }]);
      const written = await inOrganization(shared.knex, 3, async (trx) => (await trx.raw(organizationOf)).rows);
      assert.deepEqual(written, [{ org: '3' }]);
      const across = await readAcrossOrganizations(shared.knex, (run) =>
        run<{ all: string }>("SELECT current_setting('mileage.all_organizations', true) AS all"),
      );
      assert.deepEqual(across.rows, [{ all: 'on' }]);
      assert.equal(share.inUse(1), 2, 'organization 1 still holds its share: the others did not wait for it');

      // The six past their wait are refused as over the share (429 with Retry-After), not left to time out.
      const refused = await Promise.allSettled(flood.slice(2));
      for (const outcome of refused) {
        assert.equal(outcome.status, 'rejected');
        const err = (outcome as PromiseRejectedResult).reason as AppError;
        assert.ok(err instanceof AppError);
        assert.equal(err.code, status.RESOURCE_EXHAUSTED);
        assert.equal(err.details.reason, 'ORGANIZATION_SHARE_EXHAUSTED');
        assert.ok(err.details.retryAfterMs! > 0);
      }
      await lockHolder.query('SELECT pg_advisory_unlock($1)', [LOCK]);
      released = true;
      const served = await Promise.all(flood.slice(0, 2));
      assert.deepEqual(
        served.map((r) => r.rows[0]!.org),
        ['1', '1'],
      );
      assert.equal(share.inUse(1), 0);
    } finally {
      if (!released) await lockHolder.query('SELECT pg_advisory_unlock($1)', [LOCK]);
    }
  });

  test("an export's snapshot takes one of its organization's places, so a long one leaves the others theirs", async () => {
    const share = organizationLimits(shared.knex)!.share!;
    await lockHolder.query('SELECT pg_advisory_lock($1)', [LOCK]);
    let released = false;
    try {
      const snapshots = [1, 2, 3].map(() =>
        snapshotInOrganization(
          shared.knex,
          1,
          async (trx) => (await trx.raw<{ rows: { org: string }[] }>(blocked)).rows,
        ),
      );
      snapshots.forEach((p) => p.catch(() => undefined));
      assert.equal(share.inUse(1), 2, 'two snapshots hold organization 1 places; the third waits for one');
      assert.equal(share.waiters, 1);
      const other = await readInOrganization(shared.knex, 2, (run) => run<{ org: string }>(organizationOf));
      assert.deepEqual(other.rows, [{ org: '2' }]);
      const [third] = await Promise.allSettled([snapshots[2]!]);
      assert.equal(third!.status, 'rejected');
      assert.equal(
        ((third as PromiseRejectedResult).reason as AppError).details.reason,
        'ORGANIZATION_SHARE_EXHAUSTED',
      );
      await lockHolder.query('SELECT pg_advisory_unlock($1)', [LOCK]);
      released = true;
      for (const rows of await Promise.all(snapshots.slice(0, 2))) assert.equal(rows[0]!.org, '1');
      assert.equal(share.inUse(1), 0);
    } finally {
      if (!released) await lockHolder.query('SELECT pg_advisory_unlock($1)', [LOCK]);
    }
  });

  test('a costly read past its shorter statement timeout is cancelled as QUERY_TOO_COSTLY; others keep the general one', async () => {
    await lockHolder.query('SELECT pg_advisory_lock($1)', [LOCK]);
    try {
      await assert.rejects(
        readInOrganization(shared.knex, 1, (run) => run(blocked), COSTLY_READ),
        (err: unknown) =>
          err instanceof AppError &&
          err.code === status.RESOURCE_EXHAUSTED &&
          err.details.reason === 'QUERY_TOO_COSTLY',
      );
    } finally {
      await lockHolder.query('SELECT pg_advisory_unlock($1)', [LOCK]);
    }
    assert.match(
      await metrics.registry.metrics(),
      /db_costly_reads_cancelled_total\{[^}]*pool="tenancy"[^}]*organization="1"[^}]*\} 1/,
    );
    const timeout = (options?: typeof COSTLY_READ) =>
      readInOrganization(
        shared.knex,
        1,
        async (run) => (await run<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!.statement_timeout,
        options,
      );
    assert.equal(await timeout(COSTLY_READ), '150ms');
    // SET LOCAL ended with the costly read's transaction: the pool's connections keep the general timeout.
    for (let i = 0; i < 4; i++) assert.equal(await timeout(), '5s');
  });
});

test('a joined snapshot reads what its sharer reads: its organization only, nothing committed after it', async () => {
  const all = 'SELECT id FROM facts WHERE id > ? ORDER BY id';
  try {
    await snapshotInOrganization(runtime.knex, 2, async (trx) => {
      const ticket = await shareSnapshot(runtime.knex, trx, 2);
      // Committed after the snapshot was taken: neither the sharer nor the joiner sees it.
      await superuser.knex.raw('INSERT INTO facts VALUES (40, 2), (41, 1)');
      const joined = await joinSnapshot(ticket);
      try {
        assert.deepEqual(ids((await joined.run<{ id: number }>(all, [0], 'joined_facts')).rows), [2, 3]);
        assert.deepEqual(ids((await (await statementsOf(trx))<{ id: number }>(all, [0])).rows), [2, 3]);
      } finally {
        await joined.close();
      }
    });
    const now = await readInOrganization(runtime.knex, 2, (run) => run<{ id: number }>(all, [0]));
    assert.deepEqual(ids(now.rows), [2, 3, 40]);
  } finally {
    await superuser.knex.raw('DELETE FROM facts WHERE id IN (40, 41)');
  }
});

test('a snapshot ticket naming something else than a snapshot is refused before any statement', async () => {
  await snapshotInOrganization(runtime.knex, 2, async (trx) => {
    const ticket = await shareSnapshot(runtime.knex, trx, 2);
    await assert.rejects(joinSnapshot({ ...ticket, snapshot: "1-1'; SET ROLE postgres; --" }), /not a snapshot/);
  });
});

test("knex's placeholders as pg's: each ? numbered, an escaped one kept", () => {
  assert.equal(positionalText('a = ? AND b = ANY(?::int[]) AND c \\? d'), 'a = $1 AND b = ANY($2::int[]) AND c ? d');
});
