/**
 * The platform's identifiers, written once (CONTRACT §1). The schemas repeat the user id rule as CHECK constraints in
 * their migrations, which are history and stay as they were written.
 */

/** A user id: exactly 10 characters of [A-Za-z0-9] (server-generated when a SCIM create sends none). */
export const USER_ID_PATTERN = /^[A-Za-z0-9]{10}$/;

/** A UUID in its canonical text form, any version, either case. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUserId(value: string): boolean {
  return USER_ID_PATTERN.test(value);
}

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}
