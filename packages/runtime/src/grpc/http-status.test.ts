import { status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ORGANIZATION_OFFBOARDING } from './errors';
import { HTTP_ANSWERS, httpAnswer, isInvalidInput, RETRY_AFTER_SECONDS } from './http-status';
import { isUserId, isUuid } from '../formats/ids';

/** Every gRPC status code, from grpc-js's own enum (so a code added there fails this test until it is decided). */
const ALL_CODES = Object.values(status).filter((v): v is status => typeof v === 'number');

describe('gRPC status → HTTP status', () => {
  // The decision per code (docs/architecture.md, "Errors"); written out so that a change to the table is deliberate.
  const decided: Record<keyof typeof status, [number, 'client' | 'server' | 'retry']> = {
    OK: [500, 'server'],
    CANCELLED: [504, 'server'],
    UNKNOWN: [500, 'server'],
    INVALID_ARGUMENT: [400, 'client'],
    DEADLINE_EXCEEDED: [504, 'server'],
    NOT_FOUND: [404, 'client'],
    ALREADY_EXISTS: [409, 'client'],
    PERMISSION_DENIED: [403, 'client'],
    RESOURCE_EXHAUSTED: [503, 'retry'],
    FAILED_PRECONDITION: [410, 'client'],
    ABORTED: [409, 'client'],
    OUT_OF_RANGE: [400, 'client'],
    UNIMPLEMENTED: [501, 'server'],
    INTERNAL: [500, 'server'],
    UNAVAILABLE: [503, 'retry'],
    DATA_LOSS: [500, 'server'],
    UNAUTHENTICATED: [500, 'server'],
  };

  test('every code grpc-js knows has exactly one decided answer', () => {
    assert.equal(ALL_CODES.length, 17);
    assert.deepEqual(Object.keys(HTTP_ANSWERS).map(Number).sort(), [...ALL_CODES].sort());
    for (const code of ALL_CODES) {
      const name = status[code] as keyof typeof status;
      const [httpStatus, kind] = decided[name];
      const answer = httpAnswer(code);
      assert.equal(answer.status, httpStatus, name);
      assert.ok(answer.detail.length > 0, `${name} has a fixed text`);
      // Only client errors pass the service's message on; server errors never name internals.
      assert.equal(answer.passMessage, kind === 'client', `${name} passMessage`);
      assert.equal(answer.retryAfterSeconds, kind === 'retry' ? RETRY_AFTER_SECONDS : undefined, `${name} Retry-After`);
    }
  });

  test('412 is no answer to any code: only a stale If-Match is a 412', () => {
    assert.ok(ALL_CODES.every((code) => httpAnswer(code).status !== 412));
  });

  test("an error's RetryInfo sets Retry-After of the answers that have one, in whole seconds rounded up", () => {
    assert.equal(httpAnswer(status.UNAVAILABLE, 2_500).retryAfterSeconds, 3);
    assert.equal(httpAnswer(status.UNAVAILABLE, 4_000).retryAfterSeconds, 4);
    assert.equal(httpAnswer(status.UNAVAILABLE, 0).retryAfterSeconds, 1);
    assert.equal(httpAnswer(status.UNAVAILABLE, 86_400_000).retryAfterSeconds, 300);
    assert.equal(httpAnswer(status.UNAVAILABLE, Number.NaN).retryAfterSeconds, RETRY_AFTER_SECONDS);
    assert.equal(httpAnswer(status.NOT_FOUND, 2_500).retryAfterSeconds, undefined);
    assert.equal(httpAnswer(status.DEADLINE_EXCEEDED, 2_500).retryAfterSeconds, undefined);
    assert.equal(httpAnswer(status.UNAVAILABLE, 2_500).status, 503);
  });

  test("a change refused for its organization's offboarding is a 409 with the service's message; other preconditions 410", () => {
    assert.deepEqual(
      [httpAnswer(status.FAILED_PRECONDITION, undefined, ORGANIZATION_OFFBOARDING)].map((a) => [
        a.status,
        a.passMessage,
      ]),
      [[409, true]],
    );
    assert.equal(httpAnswer(status.FAILED_PRECONDITION, undefined, 'RESYNC_REQUIRED').status, 410);
  });

  test('a code outside the enum is answered as UNKNOWN', () => {
    assert.deepEqual(httpAnswer(99), HTTP_ANSWERS[status.UNKNOWN]);
    assert.deepEqual(httpAnswer(-1), HTTP_ANSWERS[status.UNKNOWN]);
  });

  test('invalid input is INVALID_ARGUMENT and OUT_OF_RANGE, nothing else', () => {
    assert.deepEqual(
      ALL_CODES.filter(isInvalidInput).map((c) => status[c]),
      ['INVALID_ARGUMENT', 'OUT_OF_RANGE'],
    );
  });
});

describe('identifiers', () => {
  test('user ids are exactly 10 characters of [A-Za-z0-9]', () => {
    for (const id of ['AliceAdm01', '0123456789', 'ZZZZZZZZZZ']) assert.ok(isUserId(id), id);
    for (const id of ['AliceAdm0', 'AliceAdm012', 'Alice-dm01', 'AliceAdm0 ', 'Ålice12345', '']) {
      assert.ok(!isUserId(id), JSON.stringify(id));
    }
  });

  test('UUIDs in canonical form, either case', () => {
    assert.ok(isUuid('0b7a1c2e-4f3d-4a5b-9c8d-7e6f5a4b3c2d'));
    assert.ok(isUuid('0B7A1C2E-4F3D-4A5B-9C8D-7E6F5A4B3C2D'));
    for (const v of ['0b7a1c2e4f3d4a5b9c8d7e6f5a4b3c2d', '0b7a1c2e-4f3d-4a5b-9c8d-7e6f5a4b3c2', 'not-a-uuid', '']) {
      assert.ok(!isUuid(v), v);
    }
  });
});

describe('answers decided by the reason (fair share, CONTRACT §7)', () => {
  test("an organization over its share of a service's database gets 429 with Retry-After, never a 5xx", () => {
    const answer = httpAnswer(status.RESOURCE_EXHAUSTED, 1_000, 'ORGANIZATION_SHARE_EXHAUSTED');
    assert.deepEqual([answer.status, answer.retryAfterSeconds, answer.passMessage], [429, 1, false]);
    assert.equal(httpAnswer(status.RESOURCE_EXHAUSTED, 2_500, 'ORGANIZATION_SHARE_EXHAUSTED').retryAfterSeconds, 3);
    const costly = httpAnswer(status.RESOURCE_EXHAUSTED, undefined, 'QUERY_TOO_COSTLY');
    assert.deepEqual([costly.status, costly.retryAfterSeconds], [429, RETRY_AFTER_SECONDS]);
    assert.match(costly.detail, /smaller pages/);
  });

  test('without a listed reason, or with a listed reason on another code, the code decides', () => {
    assert.equal(httpAnswer(status.RESOURCE_EXHAUSTED).status, 503);
    assert.equal(httpAnswer(status.RESOURCE_EXHAUSTED, undefined, 'SOMETHING_ELSE').status, 503);
    assert.equal(httpAnswer(status.RESOURCE_EXHAUSTED, undefined, 'toString').status, 503);
    assert.equal(httpAnswer(status.UNAVAILABLE, undefined, 'ORGANIZATION_SHARE_EXHAUSTED').status, 503);
  });
});
