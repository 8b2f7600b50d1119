import assert from 'node:assert/strict';
import { describe, mock, test } from 'node:test';
import { runEvery } from './service';

describe('background tasks', () => {
  test('a run still going when the next is due is not doubled; stop waits for it; failures are logged', async () => {
    mock.timers.enable({ apis: ['setInterval'] });
    try {
      let started = 0;
      let finish: () => void = () => {};
      const warnings: unknown[] = [];
      const task = runEvery(
        {
          name: 'upkeep',
          everyMs: 1_000,
          run: () => {
            started++;
            return new Promise<void>((resolve, reject) => {
              finish = started === 1 ? resolve : () => reject(new Error('second run failed'));
            });
          },
        },
        (err) => warnings.push(err),
      );
      mock.timers.tick(1_000);
      mock.timers.tick(1_000);
      mock.timers.tick(1_000);
      assert.equal(started, 1, 'the first run is still going: no second one');
      finish();
      await new Promise((resolve) => setImmediate(resolve));
      mock.timers.tick(1_000);
      assert.equal(started, 2);

      let stopped = false;
      const stopping = task.stop().then(() => (stopped = true));
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(stopped, false, 'stop waits for the run in progress');
      finish();
      await stopping;
      assert.equal(warnings.length, 1, 'the failed run was logged');
      mock.timers.tick(5_000);
      assert.equal(started, 2, 'no run after stop');
    } finally {
      mock.timers.reset();
    }
  });

  test("stop ends the task's own work too, and waits for it", async () => {
    let finish: () => void = () => {};
    let asked = 0;
    const task = runEvery(
      {
        name: 'poll',
        everyMs: 60_000,
        run: async () => {},
        stop: () => {
          asked++;
          return new Promise<void>((resolve) => (finish = resolve));
        },
      },
      () => {},
    );
    let stopped = false;
    const stopping = task.stop().then(() => (stopped = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(asked, 1);
    assert.equal(stopped, false, "stop waits for the task's work");
    finish();
    await stopping;
  });
});
