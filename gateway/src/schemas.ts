import type { usersV1 } from '@mileage/proto';

/** The External API's UserSchema (field names as the reference API spells them). */
export interface UserSchema {
  id: string;
  userName: string;
  name: { givenName: string; familyName: string; formatted: string | null };
  emails: { value: string; type: string; primary: boolean }[];
  active: boolean;
  displayName: string | null;
}

export function toUserSchema(user: usersV1.User): UserSchema {
  return {
    id: user.id,
    userName: user.userName,
    name: {
      givenName: user.name?.givenName ?? '',
      familyName: user.name?.familyName ?? '',
      formatted: user.name?.formatted ?? null,
    },
    emails: user.emails.map((e) => ({ value: e.value, type: e.type, primary: e.primary })),
    active: user.active,
    displayName: user.displayName ?? null,
  };
}
