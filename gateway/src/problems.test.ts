import { status } from '@grpc/grpc-js';
import { AppError, errors, httpAnswer, ORGANIZATION_OFFBOARDING, toStatusObject } from '@mileage/runtime/grpc';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HttpProblem, problemFromGrpc, ValidationProblem } from './problems';

const ALL_CODES = Object.values(status).filter((v): v is status => typeof v === 'number');
/** A failed call as the gRPC client hands it over: code, message, rich details in the trailers. */
const failed = (err: AppError) => toStatusObject(err);

describe('problemFromGrpc: /v1 formats the platform table', () => {
  test('every gRPC code gets the table status; invalid input is the 422 shape', () => {
    for (const code of ALL_CODES) {
      const problem = problemFromGrpc(failed(new AppError(code, 'owner text about table users')));
      const name = status[code];
      if (code === status.INVALID_ARGUMENT || code === status.OUT_OF_RANGE) {
        assert.ok(problem instanceof ValidationProblem, name);
        continue;
      }
      assert.ok(problem instanceof HttpProblem, name);
      const answer = httpAnswer(code);
      assert.equal(problem.status, answer.status, name);
      assert.equal(problem.detail, answer.passMessage ? 'owner text about table users' : answer.detail, name);
      assert.deepEqual(
        problem.headers,
        answer.retryAfterSeconds ? { 'Retry-After': String(answer.retryAfterSeconds) } : {},
        name,
      );
    }
  });

  test('field violations become FastAPI items', () => {
    const problem = problemFromGrpc(
      failed(errors.invalidArgument('invalid', [{ field: 'page.limit', description: 'at most 1000' }])),
    );
    assert.ok(problem instanceof ValidationProblem);
    assert.deepEqual(problem.issues, [{ loc: ['query', 'page', 'limit'], msg: 'at most 1000', type: 'value_error' }]);
  });

  test('FAILED_PRECONDITION is a 410 (not a 412, not a retry): with RESYNC_REQUIRED, the resync problem type', () => {
    const problem = problemFromGrpc(failed(errors.failedPrecondition('start a full sync', 'RESYNC_REQUIRED')));
    assert.ok(problem instanceof HttpProblem);
    assert.deepEqual(
      [problem.status, problem.detail, problem.type, problem.headers],
      [410, 'start a full sync', '/errors/resync-required', {}],
    );
    const other = problemFromGrpc(failed(errors.failedPrecondition('gone')));
    assert.ok(other instanceof HttpProblem);
    assert.deepEqual([other.status, other.type], [410, 'about:blank']);
  });

  test("a change refused because its organization is being offboarded is a 409 with the service's message", () => {
    const message = 'the organization is being offboarded: it can no longer request an export';
    const problem = problemFromGrpc(failed(errors.failedPrecondition(message, ORGANIZATION_OFFBOARDING)));
    assert.ok(problem instanceof HttpProblem);
    assert.deepEqual([problem.status, problem.detail, problem.type], [409, message, 'about:blank']);
  });

  test("an organization over its share of a service's database gets 429 with Retry-After, not a 503", () => {
    const problem = problemFromGrpc(
      failed(
        new AppError(status.RESOURCE_EXHAUSTED, "the organization's database share", {
          reason: 'ORGANIZATION_SHARE_EXHAUSTED',
          retryAfterMs: 1_000,
        }),
      ),
    );
    assert.ok(problem instanceof HttpProblem);
    assert.deepEqual([problem.status, problem.headers], [429, { 'Retry-After': '1' }]);
    assert.doesNotMatch(problem.detail, /database/);
  });

  test('anything that is not a gRPC error is a plain 500', () => {
    const problem = problemFromGrpc(new Error('connect ECONNREFUSED 10.0.0.1:5432'));
    assert.ok(problem instanceof HttpProblem);
    assert.deepEqual([problem.status, problem.detail], [500, 'Internal server error']);
  });
});
