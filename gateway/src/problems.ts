import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { decodeServiceError } from '@mileage/runtime';
import type { Response } from 'express';
import { STATUS_CODES } from 'node:http';

/** One item of a 422 body, FastAPI's HTTPValidationError shape. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
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
export function sendProblem(res: Response, status: number, detail: string, headers: Record<string, string> = {}): void {
  res
    .status(status)
    .set(headers)
    .json({ detail, type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status });
}

export function sendValidationProblem(res: Response, issues: ValidationIssue[]): void {
  res.status(422).json({ detail: issues });
}

export const RETRY_AFTER_UNAVAILABLE_SECONDS = 5;

/**
 * The one place where a downstream gRPC status becomes an HTTP response. Messages of server-side
 * failures are not passed on: they may name internals.
 */
export function problemFromGrpc(err: unknown): HttpProblem | ValidationProblem {
  const e = err as Partial<ServiceError>;
  if (typeof e?.code !== 'number') return new HttpProblem(500, 'Internal server error');
  const decoded = decodeServiceError(e);
  switch (decoded.code) {
    case grpcStatus.INVALID_ARGUMENT:
      return new ValidationProblem(
        (decoded.fieldViolations.length
          ? decoded.fieldViolations
          : [{ field: 'request', description: decoded.message }]
        ).map((v) => ({
          loc: ['query', ...v.field.split('.')],
          msg: v.description,
          type: 'value_error',
        })),
      );
    case grpcStatus.NOT_FOUND:
      return new HttpProblem(404, decoded.message || 'Not found');
    case grpcStatus.PERMISSION_DENIED:
      return new HttpProblem(403, decoded.message || 'Forbidden');
    case grpcStatus.ALREADY_EXISTS:
    case grpcStatus.ABORTED:
      return new HttpProblem(409, decoded.message || 'Conflict');
    case grpcStatus.FAILED_PRECONDITION:
      return new HttpProblem(412, decoded.message || 'Precondition failed');
    case grpcStatus.UNAVAILABLE:
    case grpcStatus.RESOURCE_EXHAUSTED:
      return new HttpProblem(503, 'A backing service is unavailable; try again shortly', {
        'Retry-After': String(RETRY_AFTER_UNAVAILABLE_SECONDS),
      });
    case grpcStatus.DEADLINE_EXCEEDED:
    case grpcStatus.CANCELLED:
      return new HttpProblem(504, 'A backing service did not answer in time');
    default:
      return new HttpProblem(500, 'Internal server error');
  }
}
