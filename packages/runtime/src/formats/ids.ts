/**
 * The platform's identifiers, written once (CONTRACT §1). The schemas repeat the user id rule as CHECK constraints in
 * their migrations, which are history and stay as they were written.
 */
import { randomBytes } from 'node:crypto';

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
 * Users migrations hold the database to the same rule with copies of its two parts below (CHECKs are history: a test
 * compares them), and the chart's values schema checks SCIM_CLIENT_ORGANIZATIONS by it (a test compares what it admits).
 */
export const ORGANIZATION_ALIAS_CHARACTERS = '[a-z0-9-]{1,63}';
/** The letter an alias must hold (so that no alias reads as an organization id). */
export const ORGANIZATION_ALIAS_LETTER = '[a-z]';
export const ORGANIZATION_ALIAS_PATTERN = new RegExp(
  `^(?=[0-9-]*${ORGANIZATION_ALIAS_LETTER})${ORGANIZATION_ALIAS_CHARACTERS}$`,
);

/** How the alias rule reads in an error message or a usage line. */
export const ORGANIZATION_ALIAS_RULE = '1..63 characters [a-z0-9-], at least one of them a letter';

/**
 * The claim a provisioning client's token names its organization by (the gateway's OIDC_ORGANIZATION_CLAIM default; the
 * development identity provider writes it; the chart's `gateway.oidc.organizationClaim` holds a copy a test compares).
 */
export const DEFAULT_ORGANIZATION_CLAIM = 'org_id';

export function isOrganizationAlias(value: unknown): value is string {
  return typeof value === 'string' && ORGANIZATION_ALIAS_PATTERN.test(value);
}

/** What every SCIM secret token starts with, so the gateway (and a secret scanner) can tell one from a JWT. */
export const SCIM_SECRET_TOKEN_PREFIX = 'mscim_';
/** A SCIM secret token: the prefix and 43 base64url characters (32 random bytes, 256 bits: newScimSecretToken). */
export const SCIM_SECRET_TOKEN = new RegExp(`^${SCIM_SECRET_TOKEN_PREFIX}[A-Za-z0-9_-]{43}$`);

/** A new SCIM secret token (shown once; the Users service keeps its SHA-256 only). */
export function newScimSecretToken(): string {
  return SCIM_SECRET_TOKEN_PREFIX + randomBytes(32).toString('base64url');
}
