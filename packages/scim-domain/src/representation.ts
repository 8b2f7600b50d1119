import type { usersV1 } from '@mileage/proto';
import { timestampToIso, type WireTimestamp } from '@mileage/runtime/formats';
import { ENTERPRISE_SCHEMA, USER_SCHEMA } from './declaration';

/** A SCIM document (RFC 7643): JSON attributes by name. */
export type ScimDocument = Record<string, unknown>;

/** A resource version as SCIM's weak ETag. */
export function etag(version: number): string {
  return `W/"${version}"`;
}

/** A resource's `meta` (RFC 7643 §3.1). */
export function resourceMeta(
  resourceType: 'User' | 'Group',
  record: { createTime?: WireTimestamp | undefined; updateTime?: WireTimestamp | undefined; version: number },
  location: string,
) {
  return {
    resourceType,
    created: record.createTime && timestampToIso(record.createTime),
    lastModified: record.updateTime && timestampToIso(record.updateTime),
    location,
    version: etag(record.version),
  };
}

/** The canonical document (no id, schemas or meta) of a user. */
export function userDocument(user: usersV1.User): ScimDocument {
  const { name: extraName, ...extras } = (user.scimAttributes ?? {}) as ScimDocument & { name?: ScimDocument };
  const name: ScimDocument = { ...(extraName ?? {}) };
  if (user.name?.formatted) name.formatted = user.name.formatted;
  if (user.name?.familyName) name.familyName = user.name.familyName;
  if (user.name?.givenName) name.givenName = user.name.givenName;
  return {
    ...(user.externalId ? { externalId: user.externalId } : {}),
    userName: user.userName,
    ...(Object.keys(name).length ? { name } : {}),
    ...(user.displayName ? { displayName: user.displayName } : {}),
    ...extras,
    ...(user.emails.length
      ? {
          emails: user.emails.map((e) => ({ value: e.value, ...(e.type ? { type: e.type } : {}), primary: e.primary })),
        }
      : {}),
    active: user.active,
    timezone: user.timezone,
    ...(user.enterprise && Object.keys(user.enterprise).length ? { [ENTERPRISE_SCHEMA]: user.enterprise } : {}),
  };
}

/** The full SCIM representation of a user (RFC 7643 §4.1), its `meta.location` under `usersBase` (…/scim/v2/Users). */
export function userRepresentation(user: usersV1.User, usersBase: string): ScimDocument {
  const doc = userDocument(user);
  return {
    schemas: doc[ENTERPRISE_SCHEMA] ? [USER_SCHEMA, ENTERPRISE_SCHEMA] : [USER_SCHEMA],
    id: user.id,
    ...doc,
    meta: resourceMeta('User', user, `${usersBase}/${user.id}`),
  };
}
