/**
 * The platform's identifiers, written once (CONTRACT §1). The schemas repeat the user id rule as CHECK constraints in
 * their migrations, which are history and stay as they were written.
 */

/** A user id: exactly 10 characters of [A-Za-z0-9], issued by the Users service (a SCIM create's `id` is ignored). */
export const USER_ID_PATTERN = /^[A-Za-z0-9]{10}$/;

/** A UUID in its canonical text form, any version, either case. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUserId(value: string): boolean {
  return USER_ID_PATTERN.test(value);
}

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

/**
 * An organization's alias: a short stable name, what Keycloak's Organizations feature puts in its `organization` claim
 * and what an operator binds a client to (SCIM_CLIENT_ORGANIZATIONS). 1..63 characters of [a-z0-9-] with at least one
 * letter, so that no alias reads as an organization id: a claim or a binding of digits only is always an id. The
 * Users migration `20261128190000_organization_alias_letter` holds the database to the same rule.
 */
export const ORGANIZATION_ALIAS_PATTERN = /^(?=[0-9-]*[a-z])[a-z0-9-]{1,63}$/;

/** How the alias rule reads in an error message or a usage line. */
export const ORGANIZATION_ALIAS_RULE = '1..63 characters [a-z0-9-], at least one of them a letter';

export function isOrganizationAlias(value: unknown): value is string {
  return typeof value === 'string' && ORGANIZATION_ALIAS_PATTERN.test(value);
}
