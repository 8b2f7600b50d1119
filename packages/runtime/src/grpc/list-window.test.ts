import assert from 'node:assert/strict';
import { test } from 'node:test';
import { slices } from './list-window';

test('slices: consecutive, at most the size each, none for nothing', () => {
  assert.deepEqual(slices([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
  assert.deepEqual(slices([1, 2], 2), [[1, 2]]);
  assert.deepEqual(slices([], 1000), []);
});
