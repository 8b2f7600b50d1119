import type { groupsV1 } from '@mileage/proto';
import { errors, type FieldViolation } from '@mileage/runtime/grpc';
import { isUserId } from '@mileage/runtime/formats';
import { findAttribute, GROUP_ATTRIBUTES, tooManyValues } from '@mileage/scim-domain';

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;
/** The SCIM Group's members (@mileage/scim-domain): its limit is the one every member list here obeys. */
const MEMBERS = findAttribute(GROUP_ATTRIBUTES, 'members')!;

export function validateDisplayName(name: string, required: boolean): void {
  if (name === '') {
    if (required)
      throw errors.invalidArgument('display_name is required', [{ field: 'display_name', description: 'required' }]);
    return;
  }
  if (name.length > 256 || CONTROL_CHARS.test(name) || name.trim() !== name) {
    throw errors.invalidArgument('invalid display_name', [
      { field: 'display_name', description: '1–256 characters, no control characters or surrounding spaces' },
    ]);
  }
}

/** INVALID_ARGUMENT when a group would have more members than a group may hold. */
export function requireMemberLimit(count: number, field: string): void {
  const tooMany = tooManyValues(MEMBERS, count);
  if (tooMany) throw errors.invalidArgument('too many members', [{ field, description: tooMany.description }]);
}

/** The violations of a list of user ids: each a user id, none twice; `fieldOf` names the field of the i-th. */
function userIdViolations(ids: string[], fieldOf: (i: number) => string): FieldViolation[] {
  const violations: FieldViolation[] = [];
  const seen = new Set<string>();
  ids.forEach((id, i) => {
    if (!isUserId(id)) violations.push({ field: fieldOf(i), description: 'invalid user id' });
    else if (seen.has(id)) violations.push({ field: fieldOf(i), description: 'listed twice' });
    seen.add(id);
  });
  return violations;
}

/** A PatchGroup request's difference: user ids, none named twice on either side, neither side past the limit. */
export function validateMemberChanges(request: groupsV1.PatchGroupRequest): void {
  validateMembers(request.addMembers, 'add_members');
  requireMemberLimit(request.removeMemberIds.length, 'remove_member_ids');
  const violations = userIdViolations(request.removeMemberIds, (i) => `remove_member_ids[${i}]`);
  if (violations.length) throw errors.invalidArgument('invalid members', violations);
}

/** Every member id valid, each user once, within the per-call maximum. */
export function validateMembers(members: groupsV1.Member[], field = 'members'): void {
  const violations: FieldViolation[] = [];
  const tooMany = tooManyValues(MEMBERS, members.length);
  if (tooMany) violations.push({ field, description: tooMany.description });
  violations.push(
    ...userIdViolations(
      members.map((m) => m.userId),
      (i) => `${field}[${i}].user_id`,
    ),
  );
  if (violations.length) throw errors.invalidArgument('invalid members', violations);
}

export function validateExternalId(externalId: string | undefined): void {
  if (externalId !== undefined && (externalId.length > 256 || CONTROL_CHARS.test(externalId))) {
    throw errors.invalidArgument('invalid external_id', [
      { field: 'external_id', description: 'at most 256 characters, no control characters' },
    ]);
  }
}

/** The most provisioning events one ListProvisioningEvents call returns. */
export const MAX_EVENTS_LIMIT = 1000;

export function requireEventsLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_EVENTS_LIMIT)
    throw errors.invalidArgument(`limit must be 1..${MAX_EVENTS_LIMIT}`, [
      { field: 'limit', description: `1..${MAX_EVENTS_LIMIT}` },
    ]);
}

/** A ListProvisioningEvents keyset position (both parts or neither), to the microsecond the trail keeps. */
export function eventsBefore(request: {
  beforeTime?: { seconds: number; nanos: number } | undefined;
  beforeId: number;
}): { seconds: number; micros: number; id: number } | undefined {
  const { beforeTime, beforeId } = request;
  if (!beforeTime && beforeId === 0) return undefined;
  if (!beforeTime || !Number.isSafeInteger(beforeId) || beforeId <= 0)
    throw errors.invalidArgument('before_time and a positive before_id go together', [
      { field: beforeTime ? 'before_id' : 'before_time', description: 'both or neither' },
    ]);
  return { seconds: beforeTime.seconds, micros: Math.floor(beforeTime.nanos / 1_000), id: beforeId };
}
