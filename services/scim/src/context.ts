import { status as grpcStatus } from '@grpc/grpc-js';
import { scimAuditV1, type groupsV1, type usersV1 } from '@mileage/proto';
import { type CallSettings, type PromiseClient } from '@mileage/runtime/grpc';
import { type Logger, type Metrics } from '@mileage/runtime/telemetry';
import { DEFAULT_COUNT, MAX_RESULTS } from '@mileage/scim-domain';
import { scimErrors } from './errors';
import type { Doc } from './resource';
import { LIST_SCHEMA } from './schemas';

import { etag } from '@mileage/scim-domain';

export { etag, resourceMeta } from '@mileage/scim-domain';

/** Everything a handler needs for one request. */
export interface RequestContext {
  /** The provisioning client (token azp) as the gateway attested it: the actor of the audit log. */
  actor: string;
  /** The credential's organization (attested by the gateway); `call` carries it to every owner call. */
  organizationId: number;
  requestId: string;
  /** The nonce of the gateway's attestation: the owners record it once with a write (audit). */
  attestationNonce?: string;
  call: CallSettings;
  query: URLSearchParams;
  /** Lower-case header names. */
  headers: Record<string, string>;
  /** A root /.search spans resource types: attributes that one type lacks are not an error there. */
  lenientSelection?: boolean;
}

export interface ScimDeps {
  users: PromiseClient<usersV1.UsersServiceClient>;
  groups: PromiseClient<groupsV1.GroupsServiceClient>;
  logger: Logger;
  /** Public URL of /scim/v2, for meta.location and Location headers. */
  baseUrl: string;
  metrics: Metrics;
  /**
   * How the gateway's attestation of the actor is checked: the shared secrets (the current one first, a previous one
   * while rotating), the largest age, either way, of an attestation, and how many nonces the replay cache holds.
   */
  attestation: { secrets: string[]; maxAgeSeconds: number; replayCacheEntries: number };
  /** The clock (ms) attestations are checked against; tests set it. */
  now?: () => number;
}

export interface ScimResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/**
 * The record when it is of the request's organization, else the same 404 as an id that does not exist. The owners
 * answer only their caller's organization already; this second wall costs no query.
 */
export function ownOrNotFound<T extends { organizationId: number }>(record: T, ctx: RequestContext): T {
  // Worded as the owner's NOT_FOUND (scimErrorFromGrpc), so that nothing tells which wall answered.
  if (record.organizationId !== ctx.organizationId) throw scimErrors.notFound('Resource not found');
  return record;
}

/** W/"<version>" — the resource's version counter as a weak ETag (RFC 7644 §3.14). */
/**
 * The version an If-Match header demands, 0 when there is none or it is "*"; a header naming no version of
 * ours can never match, which is a 412 like any stale one.
 */
export function ifMatchVersion(headers: Record<string, string>): number | 'mismatch' {
  const header = headers['if-match'];
  if (header === undefined || header.trim() === '*') return 0;
  const versions = header
    .split(',')
    .map((t) => /^\s*(?:W\/)?"(\d{1,15})"\s*$/.exec(t)?.[1])
    .filter((v): v is string => v !== undefined);
  return versions.length === 1 ? Number(versions[0]) : 'mismatch';
}

/** RFC 7644 §3.14: a write whose If-Match names another version than the current one is a 412. */
export function checkIfMatch(demanded: number | 'mismatch', current: number, resource: 'user' | 'group'): void {
  if (demanded === 'mismatch' || (demanded > 0 && demanded !== current)) {
    throw scimErrors.preconditionFailed(`The ${resource} is at version ${etag(current)}, not the one in If-Match`);
  }
}

/** How often a read-compute-write runs before a racing stream of changes makes it give up (503, Retry-After). */
export const STALE_WRITE_ATTEMPTS = 12;

/**
 * Runs a read-compute-write again when the owner reports that the version read is stale (another change came
 * between: the owner answers ABORTED), after a short random pause so that racing writers spread out; each round
 * one of them lands. A client that demanded a version with If-Match gets the 412 instead.
 */
export async function retryStaleWrite<T>(demanded: number | 'mismatch', write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      const stale = (err as { code?: number }).code === grpcStatus.ABORTED;
      if (!stale) throw err;
      // The version the client demanded was current when read and is stale now: RFC 7644 §3.14's 412.
      if (demanded !== 0)
        throw scimErrors.preconditionFailed('The resource was changed by someone else; read it again');
      if (attempt >= STALE_WRITE_ATTEMPTS)
        throw scimErrors.unavailable('The resource is changing too often right now; try again shortly', 1);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(100, 5 * 2 ** attempt)));
  }
}

/** How a PUT or PATCH computes the new document from the current one. */
export type ComputeDoc = (current: Doc) => Doc;

export const AUDIT_OPERATIONS = {
  replace: scimAuditV1.AuditOperation.AUDIT_OPERATION_REPLACE,
  patch: scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH,
} as const;

/** The audit entry the owner records with a write, in the write's own transaction. */
export function auditEntry(
  ctx: RequestContext,
  operation: scimAuditV1.AuditOperation,
  before?: Doc,
  after?: Doc,
): scimAuditV1.ProvisioningAudit {
  return {
    actor: ctx.actor,
    operation,
    requestId: ctx.requestId,
    ...(ctx.attestationNonce ? { attestationNonce: ctx.attestationNonce } : {}),
    ...(before ? { before } : {}),
    ...(after ? { after } : {}),
  };
}

const MAX_START_INDEX = 2 ** 31 - 1;

/** startIndex and count (RFC 7644 §3.4.2.4): 1-based; below 1 is 1; negative count is 0; above the maximum is reduced. */
export function paging(query: URLSearchParams): { startIndex: number; count: number } {
  const parse = (name: string, fallback: number) => {
    const raw = query.get(name);
    if (raw === null || raw === '') return fallback;
    if (!/^-?\d{1,12}$/.test(raw.trim())) throw scimErrors.invalidValue(`${name} must be an integer`);
    return Number(raw);
  };
  // Past the last result the page is empty whatever the number, so a huge startIndex is clamped before it reaches
  // protobuf's int32 (it was once a serialisation failure: a 500).
  const startIndex = Math.min(MAX_START_INDEX, Math.max(1, parse('startIndex', 1)));
  const count = Math.min(MAX_RESULTS, Math.max(0, parse('count', DEFAULT_COUNT)));
  return { startIndex, count };
}

/** A ListResponse (RFC 7644 §3.4.2) of one page. */
export function listResponse(resources: unknown[], totalResults: number, startIndex: number): ScimResponse {
  return {
    status: 200,
    body: { schemas: [LIST_SCHEMA], totalResults, startIndex, itemsPerPage: resources.length, Resources: resources },
  };
}

/** The meta of a representation (RFC 7643 §3.1), from the owner's record. */
