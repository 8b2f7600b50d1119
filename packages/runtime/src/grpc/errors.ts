import { Metadata, status, type ServiceError, type StatusObject } from '@grpc/grpc-js';
import { Any, rpcErrorDetails, rpcStatus } from '@mileage/proto';

export interface FieldViolation {
  field: string;
  description: string;
  reason?: string;
}

export interface ErrorDetails {
  /** Machine-readable cause, e.g. "USER_NAME_TAKEN". */
  reason?: string;
  fieldViolations?: FieldViolation[];
  /** When the caller may try again (google.rpc.RetryInfo): e.g. the time left on an open circuit. */
  retryAfterMs?: number;
}

/**
 * An error a handler means to report to its caller. Anything else thrown inside a handler becomes
 * INTERNAL with a generic message: internals never cross a process boundary.
 */
export class AppError extends Error {
  constructor(
    readonly code: status,
    message: string,
    readonly details: ErrorDetails = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const errors = {
  invalidArgument: (message: string, fieldViolations: FieldViolation[] = []) =>
    new AppError(status.INVALID_ARGUMENT, message, { fieldViolations, reason: 'INVALID_ARGUMENT' }),
  notFound: (message: string, reason = 'NOT_FOUND') => new AppError(status.NOT_FOUND, message, { reason }),
  alreadyExists: (message: string, reason = 'ALREADY_EXISTS') =>
    new AppError(status.ALREADY_EXISTS, message, { reason }),
  aborted: (message: string, reason = 'ABORTED') => new AppError(status.ABORTED, message, { reason }),
  failedPrecondition: (message: string, reason = 'FAILED_PRECONDITION') =>
    new AppError(status.FAILED_PRECONDITION, message, { reason }),
  permissionDenied: (message: string, reason = 'PERMISSION_DENIED') =>
    new AppError(status.PERMISSION_DENIED, message, { reason }),
  unavailable: (message: string, reason = 'UNAVAILABLE') => new AppError(status.UNAVAILABLE, message, { reason }),
  /** A limit of the caller's (an organization's share, a query's cost): the HTTP answer depends on the reason. */
  resourceExhausted: (message: string, reason: string) => new AppError(status.RESOURCE_EXHAUSTED, message, { reason }),
  deadlineExceeded: (message: string) =>
    new AppError(status.DEADLINE_EXCEEDED, message, { reason: 'DEADLINE_EXCEEDED' }),
  internal: (message = 'internal error') => new AppError(status.INTERNAL, message, { reason: 'INTERNAL' }),
};

const DETAILS_KEY = 'grpc-status-details-bin';
const ERROR_DOMAIN = 'mileage.platform';
const BAD_REQUEST_TYPE = 'type.googleapis.com/google.rpc.BadRequest';
const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
const RETRY_INFO_TYPE = 'type.googleapis.com/google.rpc.RetryInfo';

/** Encodes an AppError as a gRPC status with google.rpc.Status details (the rich error model). */
export function toStatusObject(err: AppError): Partial<StatusObject> {
  const metadata = new Metadata();
  metadata.set(DETAILS_KEY, Buffer.from(rpcStatus.Status.encode(toRpcStatus(err)).finish()));
  return { code: err.code, details: err.message, metadata };
}

/**
 * A failure as the error a client call would have received: what one request of a batched call failed with, read
 * as its own call's error would be (decodeServiceError, the status tables).
 */
export function serviceErrorFromStatus(st: rpcStatus.Status): ServiceError {
  const metadata = new Metadata();
  metadata.set(DETAILS_KEY, Buffer.from(rpcStatus.Status.encode(st).finish()));
  return Object.assign(new Error(`${st.code} ${status[st.code] ?? ''}: ${st.message}`), {
    code: st.code,
    details: st.message,
    metadata,
  });
}

/** An AppError as a google.rpc.Status with its details (the rich error model). */
export function toRpcStatus(err: AppError): rpcStatus.Status {
  const details: Any[] = [];
  if (err.details.reason) {
    details.push({
      typeUrl: ERROR_INFO_TYPE,
      value: Buffer.from(
        rpcErrorDetails.ErrorInfo.encode({ reason: err.details.reason, domain: ERROR_DOMAIN, metadata: {} }).finish(),
      ),
    });
  }
  if (err.details.fieldViolations?.length) {
    details.push({
      typeUrl: BAD_REQUEST_TYPE,
      value: Buffer.from(
        rpcErrorDetails.BadRequest.encode({
          fieldViolations: err.details.fieldViolations.map((v) => ({
            field: v.field,
            description: v.description,
            reason: v.reason ?? '',
          })),
        }).finish(),
      ),
    });
  }
  if (err.details.retryAfterMs !== undefined) {
    const ms = Math.max(0, Math.ceil(err.details.retryAfterMs));
    details.push({
      typeUrl: RETRY_INFO_TYPE,
      value: Buffer.from(
        rpcErrorDetails.RetryInfo.encode({
          retryDelay: { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 },
        }).finish(),
      ),
    });
  }
  return { code: err.code, message: err.message, details };
}

export interface DecodedError {
  code: status;
  message: string;
  reason?: string;
  fieldViolations: FieldViolation[];
  /** The RetryInfo delay the error carried, in milliseconds. */
  retryAfterMs?: number;
}

/** Whether a gRPC error carries the platform's status details: a server's handler answered it (see toStatusObject). */
export function hasStatusDetails(err: Partial<ServiceError>): boolean {
  return Buffer.isBuffer(err.metadata?.get(DETAILS_KEY)[0]);
}

/** Reads a gRPC error (from a client call) back into its code, message and details. */
export function decodeServiceError(err: Partial<ServiceError>): DecodedError {
  const decoded: DecodedError = {
    code: err.code ?? status.UNKNOWN,
    message: err.details ?? err.message ?? '',
    fieldViolations: [],
  };
  const raw = err.metadata?.get(DETAILS_KEY)[0];
  if (!Buffer.isBuffer(raw)) return decoded;
  try {
    const st = rpcStatus.Status.decode(raw);
    for (const any of st.details) {
      if (any.typeUrl === ERROR_INFO_TYPE) decoded.reason = rpcErrorDetails.ErrorInfo.decode(any.value).reason;
      if (any.typeUrl === RETRY_INFO_TYPE) {
        const delay = rpcErrorDetails.RetryInfo.decode(any.value).retryDelay;
        if (delay) decoded.retryAfterMs = Number(delay.seconds) * 1000 + Math.round(delay.nanos / 1_000_000);
      }
      if (any.typeUrl === BAD_REQUEST_TYPE) {
        decoded.fieldViolations = rpcErrorDetails.BadRequest.decode(any.value).fieldViolations.map((v) => ({
          field: v.field,
          description: v.description,
          ...(v.reason ? { reason: v.reason } : {}),
        }));
      }
    }
  } catch {
    // Undecodable details: keep code and message.
  }
  return decoded;
}

/** Postgres error codes that mean "the database is not there right now". */
const UNAVAILABLE_PG_CODES = new Set(['57P01', '57P02', '57P03', '53300', '08000', '08001', '08003', '08004', '08006']);
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/** Maps anything a handler threw to an AppError; unknown errors become INTERNAL (and are logged by the caller). */
export function toAppError(err: unknown): { appError: AppError; unexpected: boolean } {
  if (err instanceof AppError) return { appError: err, unexpected: false };
  const e = err as { code?: string; name?: string; message?: string } | undefined;
  if (e?.code === '57014')
    return { appError: errors.deadlineExceeded('the database query took too long'), unexpected: false };
  if (
    (e?.code && (UNAVAILABLE_PG_CODES.has(e.code) || UNAVAILABLE_NODE_CODES.has(e.code))) ||
    e?.name === 'KnexTimeoutError'
  ) {
    return { appError: errors.unavailable('the database is unavailable', 'DATABASE_UNAVAILABLE'), unexpected: false };
  }
  if (
    e?.message &&
    /Connection terminated|connection is closed|Client has encountered a connection error/i.test(e.message)
  ) {
    return { appError: errors.unavailable('the database is unavailable', 'DATABASE_UNAVAILABLE'), unexpected: false };
  }
  return { appError: errors.internal(), unexpected: true };
}

/** The organization limits' reasons (database/organization-share.ts), which the status table answers 429. */
/** The Retry-After an organization refused for its pool share is given: places free within milliseconds, so soon is right. */
export const ORGANIZATION_SHARE_RETRY_AFTER_MS = 1_000;
export const ORGANIZATION_SHARE_EXHAUSTED = 'ORGANIZATION_SHARE_EXHAUSTED';
/** A costly read (COSTLY_READ) cancelled at its statement timeout, and how long its caller is told to wait. */
export const QUERY_TOO_COSTLY = 'QUERY_TOO_COSTLY';
export const QUERY_TOO_COSTLY_RETRY_AFTER_MS = 5_000;
/** A change refused because its organization is being offboarded (FAILED_PRECONDITION, answered 409). */
export const ORGANIZATION_OFFBOARDING = 'ORGANIZATION_OFFBOARDING';
