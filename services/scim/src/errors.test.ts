import { status } from '@grpc/grpc-js';
import { AppError, errors, httpAnswer, toStatusObject } from '@mileage/runtime/grpc';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ERROR_SCHEMA, scimErrorFromGrpc } from './errors';

const ALL_CODES = Object.values(status).filter((v): v is status => typeof v === 'number');

describe('scimErrorFromGrpc: SCIM Error resources over the platform table', () => {
  test('every gRPC code gets the table status and a SCIM body', () => {
    for (const code of ALL_CODES) {
      const error = scimErrorFromGrpc(toStatusObject(new AppError(code, 'owner text')));
      const name = status[code];
      assert.ok(error, name);
      const answer = httpAnswer(code);
      assert.equal(error.status, answer.status, name);
      assert.equal(error.headers['Retry-After'], answer.retryAfterSeconds?.toString(), name);
      const body = error.body();
      assert.deepEqual(body.schemas, [ERROR_SCHEMA]);
      assert.equal(body.status, String(answer.status), `${name}: status is a string`);
      if (!answer.passMessage) assert.equal(body.detail, answer.detail, `${name} names no internals`);
    }
  });

  test('scimType: uniqueness for ALREADY_EXISTS, invalidFilter and invalidValue for invalid input', () => {
    const taken = scimErrorFromGrpc(toStatusObject(errors.alreadyExists('user_name taken', 'USER_NAME_TAKEN')));
    assert.deepEqual([taken?.status, taken?.scimType, taken?.detail], [409, 'uniqueness', 'userName is already taken']);
    const filter = scimErrorFromGrpc(
      toStatusObject(new AppError(status.INVALID_ARGUMENT, 'too many terms', { reason: 'INVALID_FILTER' })),
    );
    assert.deepEqual([filter?.status, filter?.scimType], [400, 'invalidFilter']);
    const value = scimErrorFromGrpc(
      toStatusObject(errors.invalidArgument('invalid user', [{ field: 'emails', description: 'bad address' }])),
    );
    assert.deepEqual(
      [value?.status, value?.scimType, value?.detail],
      [400, 'invalidValue', 'Invalid value (emails: bad address)'],
    );
  });

  test('a lost race is a 409 told in SCIM terms; a stale If-Match (412) is decided where the header is read', () => {
    const error = scimErrorFromGrpc(toStatusObject(errors.aborted('users row version 3 != 2')));
    assert.equal(error?.status, 409);
    assert.doesNotMatch(error!.detail, /row/);
  });

  test('an organization over its database share gets 429 with Retry-After; a list cancelled as too costly, tooMany', () => {
    const share = new AppError(status.RESOURCE_EXHAUSTED, "this service's database share", {
      reason: 'ORGANIZATION_SHARE_EXHAUSTED',
      retryAfterMs: 1_000,
    });
    const busy = scimErrorFromGrpc(toStatusObject(share));
    assert.deepEqual([busy?.status, busy?.headers['Retry-After'], busy?.scimType], [429, '1', undefined]);
    assert.doesNotMatch(busy!.detail, /database/, 'no internals');
    const costly = scimErrorFromGrpc(
      toStatusObject(new AppError(status.RESOURCE_EXHAUSTED, 'cancelled at 2000 ms', { reason: 'QUERY_TOO_COSTLY' })),
    );
    assert.deepEqual([costly?.status, costly?.scimType], [400, 'tooMany']);
    assert.match(costly!.detail, /narrower filter/);
    // Without a reason, RESOURCE_EXHAUSTED is the platform's overload: 503.
    assert.equal(scimErrorFromGrpc(toStatusObject(new AppError(status.RESOURCE_EXHAUSTED, 'x')))?.status, 503);
  });

  test('not a gRPC error: left to the caller (a bug, logged by the gRPC server)', () => {
    assert.equal(scimErrorFromGrpc(new Error('boom')), undefined);
  });
});
