import { status } from '@grpc/grpc-js';
import {
  ORGANIZATION_OFFBOARDING,
  ORGANIZATION_SHARE_EXHAUSTED,
  ORGANIZATION_SHARE_RETRY_AFTER_MS,
  QUERY_TOO_COSTLY,
  QUERY_TOO_COSTLY_RETRY_AFTER_MS,
} from './errors';

/** How an HTTP surface answers when a call to a service failed with a gRPC status. */
export interface HttpAnswer {
  status: number;
  /**
   * Whether the service's own message may reach the client. Client errors carry messages written for the caller;
   * server errors may name internals, so they get `detail` instead.
   */
  passMessage: boolean;
  /** The text when the message is not passed on (or is empty). */
  detail: string;
  /** Set when trying again later is the remedy: the `Retry-After` seconds. */
  retryAfterSeconds?: number;
}

export const RETRY_AFTER_SECONDS = 5;
/** The longest `Retry-After` an error's RetryInfo can set. */
const RETRY_AFTER_CAP_SECONDS = 300;

const clientError = (httpStatus: number, detail: string): HttpAnswer => ({
  status: httpStatus,
  passMessage: true,
  detail,
});
const serverError = (httpStatus: number, detail: string): HttpAnswer => ({
  status: httpStatus,
  passMessage: false,
  detail,
});
const tryAgain: HttpAnswer = {
  status: 503,
  passMessage: false,
  detail: 'A backing service is unavailable; try again shortly',
  retryAfterSeconds: RETRY_AFTER_SECONDS,
};
const internalError = serverError(500, 'Internal server error');
const tooLate = serverError(504, 'A backing service did not answer in time');
const invalidRequest = clientError(400, 'Invalid request');

/**
 * The one gRPC status → HTTP status table of the platform (docs/architecture.md, "Errors"). The gateway's `/v1`
 * problems and the SCIM service's Error resources are formatters on top of it: FastAPI's 422 shape for invalid input
 * on `/v1` (CONTRACT §3), a `scimType` on `/scim/v2`. 412 is not in it: only a stale `If-Match` is a 412 (CONTRACT §4),
 * and that is decided where the header is read.
 */
export const HTTP_ANSWERS: Readonly<Record<status, HttpAnswer>> = {
  // An error object claiming success is a broken peer.
  [status.OK]: internalError,
  // Our calls are cancelled only when a deadline or a shutdown ends them: the answer did not come in time.
  [status.CANCELLED]: tooLate,
  [status.UNKNOWN]: internalError,
  [status.INVALID_ARGUMENT]: invalidRequest,
  [status.DEADLINE_EXCEEDED]: tooLate,
  [status.NOT_FOUND]: clientError(404, 'Not found'),
  [status.ALREADY_EXISTS]: clientError(409, 'Conflict'),
  [status.PERMISSION_DENIED]: clientError(403, 'Forbidden'),
  // Overload (or a message over the size limit) inside the platform, not the client's rate limit (that is the 429).
  [status.RESOURCE_EXHAUSTED]: tryAgain,
  // What the request builds on is gone, and sending it again will not bring it back: the Drives service's change feed
  // when deletions since a sync's lower bound may have been purged (reason RESYNC_REQUIRED: start a full sync).
  [status.FAILED_PRECONDITION]: clientError(410, 'What this request continues from is no longer available'),
  // A concurrent change won (optimistic concurrency): the client reads again and retries.
  [status.ABORTED]: clientError(409, 'The resource was changed concurrently; read it again'),
  [status.OUT_OF_RANGE]: invalidRequest,
  // A method the called service does not have (versions out of step during a rollout).
  [status.UNIMPLEMENTED]: serverError(501, 'Not implemented'),
  [status.INTERNAL]: internalError,
  [status.UNAVAILABLE]: tryAgain,
  [status.DATA_LOSS]: internalError,
  // The gateway's own credentials towards a service were refused: a configuration fault, not the client's token.
  [status.UNAUTHENTICATED]: internalError,
};

/**
 * Where the reason of an error (its ErrorInfo) decides the answer, not its code alone: RESOURCE_EXHAUSTED is the
 * platform's overload (503) unless it is a limit of the caller's own organization, which gets 429 with `Retry-After`
 * (CONTRACT §7, fair share: over its share an organization gets 429, never a 5xx).
 */
export const REASON_ANSWERS: Readonly<Partial<Record<status, Readonly<Record<string, HttpAnswer>>>>> = {
  [status.RESOURCE_EXHAUSTED]: {
    // The organization holds its whole share of a service's database pool (organization-share.ts).
    [ORGANIZATION_SHARE_EXHAUSTED]: {
      status: 429,
      passMessage: false,
      detail: "Your organization is using its whole share of the service's capacity; try again shortly",
      retryAfterSeconds: ORGANIZATION_SHARE_RETRY_AFTER_MS / 1000,
    },
    // A costly read (a list, a page) was cancelled at its statement timeout (tenancy.ts, COSTLY_READ).
    [QUERY_TOO_COSTLY]: {
      status: 429,
      passMessage: false,
      detail: 'The request took longer than a list may take; try again later, or ask for smaller pages',
      retryAfterSeconds: QUERY_TOO_COSTLY_RETRY_AFTER_MS / 1000,
    },
  },
  [status.FAILED_PRECONDITION]: {
    // Nothing is gone: the organization's state (its offboarding) conflicts with the request.
    [ORGANIZATION_OFFBOARDING]: clientError(409, 'Conflict'),
  },
};

/**
 * The answer for a gRPC status code (and the error's ErrorInfo reason, REASON_ANSWERS); a number outside the enum is
 * treated as UNKNOWN. `retryAfterMs` (an error's RetryInfo, e.g. the time left on an open circuit) replaces the
 * table's `Retry-After` of an answer that has one, rounded up to whole seconds (at least 1).
 */
export function httpAnswer(code: number, retryAfterMs?: number, reason?: string): HttpAnswer {
  const byReason = reason === undefined ? undefined : REASON_ANSWERS[code as status];
  const answer =
    (byReason && Object.hasOwn(byReason, reason!) ? byReason[reason!] : undefined) ??
    HTTP_ANSWERS[code as status] ??
    HTTP_ANSWERS[status.UNKNOWN];
  if (answer.retryAfterSeconds === undefined || retryAfterMs === undefined || !(retryAfterMs >= 0)) return answer;
  return {
    ...answer,
    retryAfterSeconds: Math.min(RETRY_AFTER_CAP_SECONDS, Math.max(1, Math.ceil(retryAfterMs / 1000))),
  };
}

/** Is this an invalid-input answer (the one each surface shapes its own way: 422 on /v1, 400 on SCIM)? */
export function isInvalidInput(code: number): boolean {
  return code === status.INVALID_ARGUMENT || code === status.OUT_OF_RANGE;
}
