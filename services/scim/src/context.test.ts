import { status } from '@grpc/grpc-js';
import { errors, toStatusObject } from '@mileage/runtime/grpc';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { retryStaleWrite, STALE_WRITE_ATTEMPTS } from './context';
import { ScimError } from './errors';

const stale = () => toStatusObject(errors.aborted('users row version 3 != 2'));

describe('retryStaleWrite', () => {
  test('a stale version is computed again until the write lands', async () => {
    let calls = 0;
    const result = await retryStaleWrite(0, async () => {
      if (++calls < 3) throw stale();
      return 'written';
    });
    assert.deepEqual([result, calls], ['written', 3]);
  });

  test('a version demanded with If-Match that moved under the write is a 412, not retried', async () => {
    let calls = 0;
    await assert.rejects(
      retryStaleWrite(4, async () => {
        calls++;
        throw stale();
      }),
      (err) => err instanceof ScimError && err.status === 412,
    );
    assert.equal(calls, 1);
  });

  test(`after ${STALE_WRITE_ATTEMPTS} lost rounds: 503 with Retry-After`, async () => {
    let calls = 0;
    await assert.rejects(
      retryStaleWrite(0, async () => {
        calls++;
        throw stale();
      }),
      (err) => err instanceof ScimError && err.status === 503 && err.headers['Retry-After'] === '1',
    );
    assert.equal(calls, STALE_WRITE_ATTEMPTS);
  });

  test('any other failure passes through at once', async () => {
    let calls = 0;
    const unavailable = toStatusObject(errors.unavailable('down'));
    await assert.rejects(
      retryStaleWrite(0, async () => {
        calls++;
        throw unavailable;
      }),
      (err) => (err as { code?: number }).code === status.UNAVAILABLE,
    );
    assert.equal(calls, 1);
  });
});
