import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DutyCycle, pauseAfter } from './duty-cycle';

test('the pause keeps the work at its duty of the wall time', () => {
  assert.equal(pauseAfter(40, 0.5), 40);
  assert.equal(pauseAfter(30, 0.75), 10);
  assert.equal(pauseAfter(30, 1), 0);
  assert.equal(pauseAfter(-5, 0.5), 0, 'a clock that went back pauses nothing');
  for (const duty of [0, -0.5, 1.5, Number.NaN]) assert.throws(() => pauseAfter(1, duty), /duty cycle/);
});

test('pace pauses after each piece in proportion to the work since the last pause, not counting the pause', async () => {
  let now = 0;
  const pauses: number[] = [];
  const clock = {
    now: () => now,
    sleep: async (ms: number) => {
      pauses.push(ms);
      now += ms;
    },
  };
  const cycle = new DutyCycle(0.5, clock);
  for (const work of [10, 30, 0, 5]) {
    now += work;
    await cycle.pace();
  }
  assert.deepEqual(pauses, [10, 30, 5]);
  assert.equal(now, 2 * (10 + 30 + 5), 'work is half of the wall time');
});
