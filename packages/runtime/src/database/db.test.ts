/**
 * Reads retried on a dropped PostgreSQL connection, against the run's real PostgreSQL: the pool's backends are
 * terminated with pg_terminate_backend from an admin connection, as a failover, a pooler or an operator does.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { Knex } from 'knex';
import { createDatabase, droppedReadAttempts, isDroppedConnection, readWithRetry, sqlSpans, type Database } from './db';
import { databaseCheck, DependencyMonitor } from '../service/dependencies';
import { freePort } from '../config/net';
import { toAppError } from '../grpc/errors';
import { createTestDatabase, waitFor, type TestDatabase } from '../testing';

const SCHEMA = 'retry_test';
const sql = sqlSpans(SCHEMA);
let testDb: TestDatabase;
let db: Database;
let admin: pg.Client;
const applicationName = `mileage-retry-${randomBytes(4).toString('hex')}`;

before(async () => {
  testDb = await createTestDatabase('dbretry');
  db = createDatabase({
    url: testDb.url,
    schema: SCHEMA,
    migrationsDirectory: path.join(__dirname, 'no-migrations'),
    applicationName,
    poolMax: 4,
    statementTimeoutMs: 20_000,
  });
  await db.knex.raw(`CREATE SCHEMA ${SCHEMA}`);
  await db.knex.raw(`CREATE TABLE ${SCHEMA}.facts (id serial PRIMARY KEY, v int NOT NULL)`);
  await db.knex.raw(`INSERT INTO ${SCHEMA}.facts (v) VALUES (1), (2), (3)`);
  admin = new pg.Client({ connectionString: testDb.url });
  await admin.connect();
});

after(async () => {
  await admin?.end();
  await db?.close();
  await testDb?.drop();
});

/** The pool's backends running a statement that mentions `marker`. */
async function activeBackends(marker: string): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND query LIKE $2`,
    [applicationName, `%${marker}%`],
  );
  return rows.map((r) => r.pid);
}

/** Terminates the backend that runs the statement marked `marker` as soon as it runs. */
async function terminateWhenRunning(marker: string): Promise<void> {
  let pids: number[] = [];
  await waitFor(async () => (pids = await activeBackends(marker)).length > 0, { what: `${marker} running` });
  for (const pid of pids) await admin.query('SELECT pg_terminate_backend($1)', [pid]);
}

describe('reads on a dropped connection', () => {
  test('a read whose backend is terminated mid-statement is sent again on a fresh connection and succeeds', async () => {
    let attempts = 0;
    const read = readWithRetry(() =>
      sql(undefined, 'SELECT', 'SELECT facts', async () => {
        attempts += 1;
        // The first attempt is held on the server until it is terminated; the second is the read itself.
        const held = attempts === 1 ? `, pg_sleep(30) AS held_read_1` : '';
        return db.knex.raw<{ rows: { total: string }[] }>(`SELECT count(*) AS total${held} FROM ${SCHEMA}.facts`);
      }),
    );
    await terminateWhenRunning('held_read_1');
    const { rows } = await read;
    assert.equal(rows[0]!.total, '3');
    assert.equal(attempts, 2);
  });

  test('after every pooled connection is terminated, concurrent reads all succeed', async () => {
    for (let round = 0; round < 5; round++) {
      // Fill the pool with idle connections, then end them all from the server side.
      const connections = (await Promise.all([1, 2, 3, 4].map(() => db.knex.client.acquireConnection()))) as {
        processID: number;
      }[];
      const pids = connections.map((c) => c.processID);
      for (const c of connections) await db.knex.client.releaseConnection(c);
      assert.equal(new Set(pids).size, 4);
      await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
      const reads = await Promise.allSettled(
        Array.from({ length: 8 }, () =>
          readWithRetry(() =>
            sql(undefined, 'SELECT', 'SELECT facts', async () =>
              db.knex.raw<{ rows: unknown[] }>(`SELECT v FROM ${SCHEMA}.facts`),
            ),
          ),
        ),
      );
      const failed = reads.filter((r) => r.status === 'rejected');
      assert.deepEqual(
        failed.map((r) => String((r as PromiseRejectedResult).reason)),
        [],
        `round ${round}: every read succeeds`,
      );
    }
  });

  test('a write whose backend is terminated mid-statement is not sent again (it may have committed)', async () => {
    let attempts = 0;
    const write = sql(undefined, 'INSERT', 'INSERT INTO facts', async () => {
      attempts += 1;
      return db.knex.raw(`INSERT INTO ${SCHEMA}.facts (v) SELECT 99 FROM (SELECT pg_sleep(30) AS held_write_1) AS s`);
    });
    const failure = write.then(
      () => undefined,
      (err: unknown) => err,
    );
    await terminateWhenRunning('held_write_1');
    const err = await failure;
    assert.ok(err, 'the write fails');
    assert.ok(isDroppedConnection(err), `a dropped connection: ${String(err)}`);
    assert.equal(toAppError(err).appError.code, 14, 'answered UNAVAILABLE (503 + Retry-After at the edge)');
    assert.equal(attempts, 1);
    const { rows } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${SCHEMA}.facts WHERE v = 99`);
    assert.equal(rows[0]!.n, '0');
  });

  test('other failures of a read are not retried, and a second dropped connection is the caller’s', async () => {
    let attempts = 0;
    await assert.rejects(
      readWithRetry(async () => {
        attempts += 1;
        return db.knex.raw(`SELECT nope FROM ${SCHEMA}.facts`);
      }),
      (err: { code?: string }) => err.code === '42703',
    );
    assert.equal(attempts, 1);
    attempts = 0;
    const dropped = Object.assign(new Error('Connection terminated unexpectedly'), {});
    await assert.rejects(
      readWithRetry(async () => {
        attempts += 1;
        throw dropped;
      }),
      (err) => err === dropped,
    );
    assert.equal(attempts, 2);
  });

  test('a read meeting dead connection after dead connection gets one attempt per pooled connection and one more', async () => {
    // Every session terminated while the pool still holds them: each attempt meets one the pool has not yet noticed.
    const attemptsAllowed = droppedReadAttempts(db.knex);
    assert.equal(attemptsAllowed, 5, 'a pool of 4: four dead ones, then one opened after the drop');
    const dropped = () =>
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    let attempts = 0;
    const value = await readWithRetry(async () => {
      attempts += 1;
      if (attempts < attemptsAllowed) throw dropped();
      return 'read';
    }, attemptsAllowed);
    assert.equal(value, 'read');
    assert.equal(attempts, attemptsAllowed);
    attempts = 0;
    await assert.rejects(
      readWithRetry(async () => {
        attempts += 1;
        throw dropped();
      }, attemptsAllowed),
      (err: { code?: string }) => err.code === '57P01',
    );
    assert.equal(attempts, attemptsAllowed, 'and no more: connections dropped without end are an outage (503)');
  });
});

describe('the database check of the dependency monitor (a read too)', () => {
  test('answers true while the database answers, also right after every pooled session was terminated', async () => {
    const check = databaseCheck(db.knex);
    assert.equal(await check.check(1_000), true);
    // Fill the pool, then end every one of its sessions as a pooler or an operator would.
    await Promise.all([1, 2, 3, 4].map(() => db.knex.raw('SELECT pg_sleep(0.05)')));
    const { rowCount } = await admin.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
      [applicationName],
    );
    assert.ok((rowCount ?? 0) >= 1, 'the pool held sessions to terminate');
    assert.equal(await check.check(1_000), true);
  });

  test('a session found dropped is checked again on another connection; any other failure is a failed check', async () => {
    const dropped = () =>
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    let calls = 0;
    const flaky = {
      raw: async () => {
        calls += 1;
        if (calls === 1) throw dropped();
        return { rows: [] };
      },
      client: { pool: { max: 3 } },
    } as unknown as Knex;
    assert.equal(await databaseCheck(flaky).check(1_000), true);
    assert.equal(calls, 2);

    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    calls = 0;
    const down = {
      raw: async () => {
        calls += 1;
        throw refused;
      },
      client: { pool: { max: 3 } },
    } as unknown as Knex;
    await assert.rejects(databaseCheck(down).check(1_000), (err) => err === refused);
    assert.equal(calls, 1, 'a database that refuses connections is not asked again');
  });

  test('a database nobody listens for is down for the monitor', async () => {
    const unreachable = createDatabase({
      url: `postgres://nobody:nothing@127.0.0.1:${await freePort()}/none`,
      schema: SCHEMA,
      migrationsDirectory: path.join(__dirname, 'no-migrations'),
      applicationName,
    });
    try {
      const monitor = new DependencyMonitor({ checks: [databaseCheck(unreachable.knex)], failuresBeforeDown: 1 });
      await monitor.checkNow();
      assert.equal(monitor.isUp('postgres'), false);
    } finally {
      await unreachable.close();
    }
  });
});
