import { status as grpcStatus } from '@grpc/grpc-js';
import { decodeServiceError, httpAnswer, isInvalidInput, QUERY_TOO_COSTLY } from '@mileage/runtime/grpc';

export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** RFC 7644 §3.12 scimType values. */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive';

/** An error answered as a SCIM Error resource; `detail` is written for the administrator reading the IdP's log. */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly scimType?: ScimType,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'ScimError';
  }

  body(): Record<string, unknown> {
    return {
      schemas: [ERROR_SCHEMA],
      status: String(this.status),
      ...(this.scimType ? { scimType: this.scimType } : {}),
      detail: this.detail,
    };
  }
}

export const scimErrors = {
  invalidSyntax: (detail: string) => new ScimError(400, detail, 'invalidSyntax'),
  invalidValue: (detail: string) => new ScimError(400, detail, 'invalidValue'),
  /** Input that breaks an attribute's rules, told as the owner tells it (scimErrorFromGrpc), whichever checked first. */
  invalidFields: (violations: { field: string; description: string }[]) =>
    new ScimError(
      400,
      `Invalid value (${violations.map((v) => `${v.field}: ${v.description}`).join('; ')})`,
      'invalidValue',
    ),
  invalidFilter: (detail: string) => new ScimError(400, detail, 'invalidFilter'),
  /** RFC 7644 §3.12: more than the server is willing to calculate or process. */
  tooMany: (detail: string) => new ScimError(400, detail, 'tooMany'),
  invalidPath: (detail: string) => new ScimError(400, detail, 'invalidPath'),
  noTarget: (detail: string) => new ScimError(400, detail, 'noTarget'),
  mutability: (detail: string) => new ScimError(400, detail, 'mutability'),
  uniqueness: (detail: string) => new ScimError(409, detail, 'uniqueness'),
  notFound: (detail: string) => new ScimError(404, detail),
  preconditionFailed: (detail: string) => new ScimError(412, detail),
  notImplemented: (detail: string) => new ScimError(501, detail),
  /** Try again later: a backing service is down, or the resource is busy with another change. */
  unavailable: (detail: string, retryAfterSeconds: number) =>
    new ScimError(503, detail, undefined, { 'Retry-After': String(retryAfterSeconds) }),
};

/**
 * An owner service's gRPC error as the SCIM Error resource the client sees: the status from the platform's one table
 * (`httpAnswer`, packages/runtime); this only adds SCIM's body (RFC 7644 §3.12: `scimType`, and invalid input is 400).
 */
export function scimErrorFromGrpc(err: unknown): ScimError | undefined {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'number') return undefined;
  const decoded = decodeServiceError(err as Parameters<typeof decodeServiceError>[0]);
  const answer = httpAnswer(code, decoded.retryAfterMs, decoded.reason);
  if (isInvalidInput(code)) {
    if (decoded.reason === 'INVALID_FILTER') return scimErrors.invalidFilter(decoded.message);
    if (decoded.fieldViolations.length) return scimErrors.invalidFields(decoded.fieldViolations);
    return scimErrors.invalidValue(decoded.message || answer.detail);
  }
  // A list cancelled at the owner's costly statement timeout: the same request would be cancelled again, so it is
  // the client's to narrow (RFC 7644 §3.12 tooMany), not a 429 to retry as is.
  if (code === grpcStatus.RESOURCE_EXHAUSTED && decoded.reason === QUERY_TOO_COSTLY) {
    return scimErrors.tooMany(
      'The query took longer than this service lets a list run and was cancelled: use a narrower filter ' +
        '(eq on userName, externalId or emails.value) or a smaller count',
    );
  }
  if (code === grpcStatus.ALREADY_EXISTS) {
    return scimErrors.uniqueness(
      decoded.reason === 'USER_NAME_TAKEN' ? 'userName is already taken' : decoded.message || answer.detail,
    );
  }
  // A 404 or a lost race is told in the client's terms, not in the owner's internal wording.
  const detail =
    code === grpcStatus.NOT_FOUND
      ? 'Resource not found'
      : code !== grpcStatus.ABORTED && answer.passMessage && decoded.message;
  return new ScimError(
    answer.status,
    detail || answer.detail,
    undefined,
    answer.retryAfterSeconds ? { 'Retry-After': String(answer.retryAfterSeconds) } : {},
  );
}
