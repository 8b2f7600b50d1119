/**
 * The dependency monitor: what fails calls fast and sets `dependency_up` (its database check is tested with the reads
 * on dropped connections, db.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DependencyMonitor, whileDatabaseDown } from './dependencies';

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
