// What a verified token says about its organization: how the claim that names it is read. A leaf module:
// the verifier (auth.ts) and the SCIM credentials (organization-credentials.ts) both read it.
import { isOrganizationId } from '@mileage/runtime/grpc';
import { ORGANIZATION_ALIAS_PATTERN } from '@mileage/runtime/formats';

/** What a token says about its organization. */
export type NamedOrganization =
  /** Already resolved (a SCIM secret token's organization). */
  | { id: number }
  /** An organization's id or alias, as a claim gave it. */
  | { reference: string }
  /** A claim that names no single organization (a wrong type, several organizations): never a fallback to a binding. */
  | { unusable: true };

/** The claim Keycloak's Organizations feature writes: `["alias"]` or `{"alias": {…}}`. */
export const KEYCLOAK_ORGANIZATION_CLAIM = 'organization';

// At least one letter: a reference of digits only is always an organization id.
const ALIAS = ORGANIZATION_ALIAS_PATTERN;
const REFERENCE_MAX_LENGTH = 63;

/** An organization reference (an id or an alias) that could name one. */
export function isOrganizationReference(value: string): boolean {
  return isOrganizationId(value) || ALIAS.test(value);
}

/** The organization a verified token's payload names: the configured claim first, then Keycloak's claim. */
export function namedOrganization(payload: Record<string, unknown>, claim: string): NamedOrganization | undefined {
  const configured = payload[claim];
  if (configured !== undefined) {
    const value = typeof configured === 'number' ? String(configured) : configured;
    return typeof value === 'string' && value.length <= REFERENCE_MAX_LENGTH && isOrganizationReference(value)
      ? { reference: value }
      : { unusable: true };
  }
  const keycloak = payload[KEYCLOAK_ORGANIZATION_CLAIM];
  if (keycloak === undefined) return undefined;
  const names = Array.isArray(keycloak)
    ? keycloak
    : typeof keycloak === 'object' && keycloak !== null
      ? Object.keys(keycloak)
      : [];
  const [name] = names;
  return names.length === 1 && typeof name === 'string' && ALIAS.test(name) ? { reference: name } : { unusable: true };
}
