import type { ServiceError } from '@grpc/grpc-js';
import {
  decodeServiceError,
  grpcFailureOf,
  HOP_REFUSALS,
  httpAnswer,
  isInvalidInput,
  type HttpAnswer,
} from '@mileage/runtime/grpc';
import { type Logger } from '@mileage/runtime/telemetry';
import type { Response } from 'express';
import { STATUS_CODES } from 'node:http';

/** One item of a 422 body, FastAPI's HTTPValidationError shape. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/**
 * (+) Problem types beyond `about:blank` (RFC 9457 `type`, relative to the gateway; each is described there and in the
 * OpenAPI document). A client matches the string.
 */
export const PROBLEM_TYPES = {
  /** 410 on the change feed: tombstones since the sync's lower bound may be gone; start a full sync. */
  resyncRequired: '/errors/resync-required',
  /** 409 on requesting an organization export while one is queued or running: wait for it (CONTRACT §8). */
  exportRunning: '/errors/export-running',
} as const;

/** The problem type of a service error's reason, when it has one of its own. */
const TYPE_OF_REASON: Record<string, string> = {
  RESYNC_REQUIRED: PROBLEM_TYPES.resyncRequired,
  EXPORT_RUNNING: PROBLEM_TYPES.exportRunning,
};

export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
    readonly type = 'about:blank',
  ) {
    super(detail);
    this.name = 'HttpProblem';
  }
}

export class ValidationProblem extends Error {
  constructor(readonly issues: ValidationIssue[]) {
    super('validation failed');
    this.name = 'ValidationProblem';
  }
}

/** `{"detail": "..."}` plus the RFC 9457 members `type`, `title`, `status`. */
export function sendProblem(
  res: Response,
  status: number,
  detail: string,
  headers: Record<string, string> = {},
  type = 'about:blank',
): void {
  res
    .status(status)
    .set(headers)
    .json({ detail, type, title: STATUS_CODES[status] ?? 'Error', status });
}

export function sendValidationProblem(res: Response, issues: ValidationIssue[]): void {
  res.status(422).json({ detail: issues });
}

/**
 * A downstream gRPC failure as this gateway's problem: the status from the platform's one table (`httpAnswer`,
 * packages/runtime), invalid input in FastAPI's 422 shape (CONTRACT §3). Messages of server-side failures are not
 * passed on: they may name internals.
 */
export function problemFromGrpc(err: unknown): HttpProblem | ValidationProblem {
  const e = err as Partial<ServiceError>;
  if (typeof e?.code !== 'number') return new HttpProblem(500, 'Internal server error');
  const decoded = decodeServiceError(e);
  if (isInvalidInput(decoded.code)) {
    return new ValidationProblem(
      (decoded.fieldViolations.length
        ? decoded.fieldViolations
        : [{ field: 'request', description: decoded.message || 'invalid request' }]
      ).map((v) => ({ loc: ['query', ...v.field.split('.')], msg: v.description, type: 'value_error' })),
    );
  }
  if (decoded.reason && HOP_REFUSALS.has(decoded.reason)) return new HttpProblem(500, 'Internal server error');
  return problemOfAnswer(
    httpAnswer(decoded.code, decoded.retryAfterMs, decoded.reason),
    decoded.message,
    decoded.reason,
  );
}

/** The answer the status table gives a gRPC status code, without a service's message (e.g. 503 + Retry-After). */
export function problemFromStatus(code: number): HttpProblem {
  return problemOfAnswer(httpAnswer(code));
}

function problemOfAnswer(answer: HttpAnswer, message?: string, reason?: string): HttpProblem {
  return new HttpProblem(
    answer.status,
    (answer.passMessage && message) || answer.detail,
    answer.retryAfterSeconds ? { 'Retry-After': String(answer.retryAfterSeconds) } : {},
    (reason && TYPE_OF_REASON[reason]) || 'about:blank',
  );
}

/**
 * Logs a failed downstream call answered with `status`: a 503 or 504 is expected while a dependency is down (a warning
 * with the call's gRPC code and message, no stack), any other 5xx is an error with the whole error.
 */
export function logDownstreamFailure(
  logger: Logger,
  err: unknown,
  status: number,
  requestId: string | undefined,
  message: string,
): void {
  if (status < 500) return;
  if (status !== 503 && status !== 504) return logger.error({ err, request_id: requestId }, message);
  logger.warn({ ...grpcFailureOf(err), request_id: requestId }, 'downstream unavailable');
}
