import { errors, type FieldViolation } from '@mileage/runtime/grpc';
import { isUserId } from '@mileage/runtime/formats';
import type { usersV1 } from '@mileage/proto';
import { extraPrimary, findAttribute, tooManyValues, USER_ATTRIBUTES } from '@mileage/scim-domain';

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+$/;
const MAX_TEXT = 256;
/** The SCIM User's emails (@mileage/scim-domain): its rules are enforced here, where the addresses are kept. */
const EMAILS = findAttribute(USER_ATTRIBUTES, 'emails')!;

/** Validates the writable fields of a user; throws INVALID_ARGUMENT listing every violation. */
export function validateUserInput(user: usersV1.User | undefined, options: { idRequired: boolean }): usersV1.User {
  if (!user) throw errors.invalidArgument('user is required', [{ field: 'user', description: 'required' }]);
  const violations: FieldViolation[] = [];
  const text = (field: string, value: string | undefined, required: boolean) =>
    violations.push(...textViolations(field, value, required));
  if (options.idRequired || user.id !== '') {
    if (!isUserId(user.id)) violations.push({ field: 'id', description: 'must be exactly 10 characters [A-Za-z0-9]' });
  }
  text('user_name', user.userName, true);
  if (user.userName && user.userName.trim() !== user.userName)
    violations.push({ field: 'user_name', description: 'must not start or end with spaces' });
  text('name.given_name', user.name?.givenName, false);
  text('name.family_name', user.name?.familyName, false);
  text('name.formatted', user.name?.formatted, false);
  text('display_name', user.displayName, false);
  text('external_id', user.externalId, false);
  if (user.timezone && !isTimeZone(user.timezone))
    violations.push({ field: 'timezone', description: 'must be an IANA time zone name' });
  const tooMany = tooManyValues(EMAILS, user.emails.length);
  if (tooMany) violations.push(tooMany);
  user.emails.forEach((email, i) => {
    if (!EMAIL_PATTERN.test(email.value) || email.value.length > MAX_TEXT) {
      violations.push({ field: `emails[${i}].value`, description: 'must be an e-mail address' });
    }
    text(`emails[${i}].type`, email.type, false);
  });
  const primaries = extraPrimary(EMAILS, user.emails);
  if (primaries) violations.push(primaries);
  if (violations.length) throw errors.invalidArgument('invalid user', violations);
  return user;
}

/** INVALID_ARGUMENT listing `violations`, if there are any. */
export function refuse(violations: FieldViolation[], what: string): void {
  if (violations.length) throw errors.invalidArgument(`invalid ${what}`, violations);
}

/** What is wrong with a text field (empty counts as absent): at most `max` characters, no control characters. */
export function textViolations(
  field: string,
  value: string | undefined,
  required: boolean,
  max = MAX_TEXT,
): FieldViolation[] {
  if (value === undefined || value === '') return required ? [{ field, description: 'required' }] : [];
  const violations: FieldViolation[] = [];
  if (value.length > max) violations.push({ field, description: `at most ${max} characters` });
  if (CONTROL_CHARS.test(value)) violations.push({ field, description: 'must not contain control characters' });
  return violations;
}

const knownZones = new Set(Intl.supportedValuesOf('timeZone'));
knownZones.add('UTC');

export function isTimeZone(value: string): boolean {
  return knownZones.has(value);
}
