import assert from 'node:assert/strict';
import { test } from 'node:test';
import { failureKinds } from './load';

test('failed requests by kind: each non-2xx status, connection errors apart from timeouts', () => {
  assert.deepEqual(
    failureKinds({
      errors: 3, // autocannon counts its 2 timeouts among them
      timeouts: 2,
      statusCodeStats: { 200: { count: 900 }, 204: { count: 3 }, 429: { count: 0 }, 503: { count: 1 } },
    } as never),
    { 503: 1, errors: 1, timeouts: 2 },
  );
  assert.deepEqual(failureKinds({ errors: 0, timeouts: 0, statusCodeStats: { 200: { count: 5 } } } as never), {});
});
