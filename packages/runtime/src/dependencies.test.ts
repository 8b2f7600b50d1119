/**
 * The dependency monitor (what fails calls fast and sets `dependency_up`) and the database check it runs, the latter
 * against the run's real PostgreSQL.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Knex } from 'knex';
import pg from 'pg';
import { createDatabase, type Database } from './db';
import { databaseCheck, DependencyMonitor, whileDatabaseDown } from './dependencies';
import { freePort } from './net';
import { createTestDatabase, type TestDatabase } from './testing';

describe('DependencyMonitor', () => {
  /** A check answering from a script of outcomes, one per round. */
  const scripted = (name: string, outcomes: boolean[]) => ({ name, check: async () => outcomes.shift() ?? true });

  test('a dependency counts as down only after failuresBeforeDown failed checks in a row, and back at one success', async () => {
    const changes: [string, boolean][] = [];
    const monitor = new DependencyMonitor({
      checks: [scripted('postgres', [false, true, false, false, false, true])],
      failuresBeforeDown: 2,
      onChange: (name, up) => changes.push([name, up]),
    });
    const refuse = whileDatabaseDown(monitor);
    const ups: boolean[] = [];
    for (let round = 0; round < 6; round++) {
      await monitor.checkNow();
      ups.push(monitor.isUp('postgres'));
    }
    // One failure between successes is not an outage; the second failure in a row is, until a check succeeds.
    assert.deepEqual(ups, [true, true, true, false, false, true]);
    assert.deepEqual(changes, [
      ['postgres', false],
      ['postgres', true],
    ]);
    assert.equal(refuse(), undefined);
  });

  test('while the database is down, calls are refused at once with UNAVAILABLE, and the report says degraded', async () => {
    const monitor = new DependencyMonitor({ checks: [scripted('postgres', [false])], failuresBeforeDown: 1 });
    assert.equal(monitor.report().status, 'ok', 'up until a check says otherwise');
    await monitor.checkNow();
    const refusal = whileDatabaseDown(monitor)();
    assert.equal(refusal?.code, 14);
    assert.equal(refusal?.details.reason, 'DATABASE_UNAVAILABLE');
    const report = monitor.report();
    assert.equal(report.status, 'degraded');
    assert.equal(report.dependencies.postgres?.consecutiveFailures, 1);
  });

  test('a check that does not answer within timeoutMs counts as failed', async () => {
    const monitor = new DependencyMonitor({
      checks: [{ name: 'frozen', check: () => new Promise<boolean>(() => {}) }],
      timeoutMs: 20,
      failuresBeforeDown: 1,
    });
    await monitor.checkNow();
    assert.equal(monitor.isUp('frozen'), false);
  });
});

describe('databaseCheck', () => {
  let testDb: TestDatabase;
  let db: Database;
  let admin: pg.Client;
  const applicationName = `mileage-check-${randomBytes(4).toString('hex')}`;

  before(async () => {
    testDb = await createTestDatabase('depcheck');
    db = createDatabase({
      url: testDb.url,
      schema: 'depcheck',
      migrationsDirectory: path.join(__dirname, 'no-migrations'),
      applicationName,
      poolMax: 3,
    });
    admin = new pg.Client({ connectionString: testDb.url });
    await admin.connect();
  });

  after(async () => {
    await admin?.end();
    await db?.close();
    await testDb?.drop();
  });

  test('answers true while the database answers, also right after every pooled session was terminated', async () => {
    const check = databaseCheck(db.knex);
    assert.equal(await check.check(1_000), true);
    // Fill the pool, then end every one of its sessions as a pooler or an operator would.
    await Promise.all([1, 2, 3].map(() => db.knex.raw('SELECT pg_sleep(0.05)')));
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
      schema: 'depcheck',
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
