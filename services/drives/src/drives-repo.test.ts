import assert from 'node:assert/strict';
import { test } from 'node:test';
import { upperBound } from './drives-repo';

const MIN_ID = '-9223372036854775808';

test('upperBound: nothing to bound', () => {
  assert.equal(upperBound(undefined, undefined, undefined), undefined);
});

test('upperBound: a position below the horizon is the bound', () => {
  const position = { sortTime: '2026-11-01T10:00:00.000Z', id: 42 };
  assert.deepEqual(upperBound(undefined, new Date('2026-11-23T10:00:00.000Z'), position), {
    time: '2026-11-01T10:00:00.000Z',
    id: 42,
  });
});

test('upperBound: the horizon or `before` below the position bounds the whole instant', () => {
  const position = { sortTime: '2026-11-23T10:00:00.000Z', id: 42 };
  assert.deepEqual(upperBound(undefined, new Date('2026-11-20T00:00:00.000Z'), position), {
    time: '2026-11-20T00:00:00.000Z',
    id: MIN_ID,
  });
  assert.deepEqual(upperBound('2026-11-21T00:00:00.000Z', new Date('2026-11-22T00:00:00.000Z'), position), {
    time: '2026-11-21T00:00:00.000Z',
    id: MIN_ID,
  });
});

test('upperBound: at the same instant, "before the instant" is below the position', () => {
  const position = { sortTime: '2026-11-23T10:00:00.000Z', id: 42 };
  assert.deepEqual(upperBound('2026-11-23T10:00:00.000Z', undefined, position), {
    time: '2026-11-23T10:00:00.000Z',
    id: MIN_ID,
  });
  assert.deepEqual(upperBound(undefined, new Date('2026-11-23T10:00:00.000Z'), position), {
    time: '2026-11-23T10:00:00.000Z',
    id: MIN_ID,
  });
});
