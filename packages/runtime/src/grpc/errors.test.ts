import { status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AppError, decodeServiceError, errors, serviceErrorFromStatus, toRpcStatus } from './errors';

test("a failure carried as a google.rpc.Status reads back as its own call's error would", () => {
  const failures = [
    errors.invalidArgument('bad', [{ field: 'ids', description: 'at most 1000' }]),
    new AppError(status.UNAUTHENTICATED, 'not attested', { reason: 'ATTESTATION_REPLAYED' }),
    new AppError(status.UNAVAILABLE, 'busy', { reason: 'OVERLOADED', retryAfterMs: 1500 }),
    errors.internal(),
  ];
  for (const failure of failures) {
    const err = serviceErrorFromStatus(toRpcStatus(failure));
    assert.equal(err.code, failure.code);
    assert.equal(err.details, failure.message);
    assert.deepEqual(decodeServiceError(err), {
      code: failure.code,
      message: failure.message,
      fieldViolations: failure.details.fieldViolations ?? [],
      ...(failure.details.reason ? { reason: failure.details.reason } : {}),
      ...(failure.details.retryAfterMs !== undefined ? { retryAfterMs: failure.details.retryAfterMs } : {}),
    });
  }
});
