import type { Metadata } from '@grpc/grpc-js';
import { errors } from './errors';

/**
 * The organization travels between processes as `x-mileage-organization` metadata (CallSettings.organizationId), like
 * the request id; the organization interceptor (grpc/interceptors/organization.ts) reads it once, as the method's `.proto` scope
 * says, and a handler runs in it with inCallOrganization or readInCallOrganization.
 */
export const ORGANIZATION_METADATA_KEY = 'x-mileage-organization';

const ORGANIZATION_ID_PATTERN = /^[1-9][0-9]{0,15}$/;

/** A positive integer organization id that fits a JavaScript number and a bigint. */
export function isOrganizationId(value: unknown): boolean {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0;
  return typeof value === 'string' && ORGANIZATION_ID_PATTERN.test(value);
}

/** The organization of a gRPC call (its `x-mileage-organization` metadata), undefined when it carries none. */
export function callOrganization(ctx: { metadata: Metadata }): number | undefined {
  const values = ctx.metadata.get(ORGANIZATION_METADATA_KEY);
  if (values.length === 0) return undefined;
  const [value] = values;
  if (values.length > 1 || typeof value !== 'string' || !ORGANIZATION_ID_PATTERN.test(value))
    throw errors.invalidArgument(`${ORGANIZATION_METADATA_KEY} must be one positive integer`, [
      { field: ORGANIZATION_METADATA_KEY, description: 'invalid organization id' },
    ]);
  return Number(value);
}

/**
 * The organization a call acts inside, as the organization interceptor established it from its method's scope
 * (grpc/interceptors/organization.ts, its .proto's `organization`): FAILED_PRECONDITION ORGANIZATION_REQUIRED when there is none
 * (a method whose scope is `required` never gets that far without one).
 */
export function requireOrganization(ctx: { organizationId?: number | undefined }): number {
  if (ctx.organizationId === undefined)
    throw errors.failedPrecondition(
      `this call acts inside an organization: send ${ORGANIZATION_METADATA_KEY}`,
      'ORGANIZATION_REQUIRED',
    );
  return ctx.organizationId;
}
