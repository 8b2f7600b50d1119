import { errors } from '../errors';
import { callOrganization, isOrganizationId, ORGANIZATION_METADATA_KEY } from '../organization-metadata';
import type { InboundCall, Interceptor } from './interceptor';
import { requestField } from './request-field';

/**
 * The organization a call names: its request's `organizationField` when its rules name one, else its
 * `x-mileage-organization` metadata (INVALID_ARGUMENT when that is not one positive integer).
 */
export function organizationNamed(call: Pick<InboundCall, 'rules' | 'request' | 'metadata'>): number | undefined {
  if (!call.rules.organizationField) return callOrganization(call);
  const value = requestField(call.request, call.rules.organizationField);
  return isOrganizationId(value) ? Number(value) : undefined;
}

/**
 * The organization the call acts inside, as its rules' scope says: `required` refuses a call that names none
 * (FAILED_PRECONDITION, reason ORGANIZATION_REQUIRED); `across-unless-named` takes the one it names, if any; `none`
 * acts in no organization of the call's. Handlers read it from their context (CallContext.organizationId).
 */
export function organizationScope(): Interceptor {
  return (next) => (call) => {
    if (call.rules.organization === 'none') return next(call);
    const organizationId = organizationNamed(call);
    if (organizationId === undefined && call.rules.organization === 'required')
      throw errors.failedPrecondition(
        `this call acts inside an organization: send ${call.rules.organizationField ?? ORGANIZATION_METADATA_KEY}`,
        'ORGANIZATION_REQUIRED',
      );
    call.organizationId = organizationId;
    return next(call);
  };
}
