import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { scimAuditV1, usersV1 } from '@mileage/proto';
import {
  provisioningEventRepresentation,
  TRAIL_OWNERS,
  type ProvisioningEventRepresentation,
  type TrailOwner,
} from '@mileage/runtime/audit';
import { apiTime, apiTimeOrNull, dateToTimestamp, parseRfc3339, type WireTimestamp } from '@mileage/runtime/formats';
import { decodeServiceError } from '@mileage/runtime/grpc';
import type { Request } from 'express';
import { CursorCodec, type CursorPosition } from '../cursor';
import { pageLimitParameter } from '../drive-params';
import { HttpProblem, ValidationProblem, type ValidationIssue } from '../problems';
import type { Account, ApiParameter, RouteSpec } from '../v1';
import { jsonBody, pageLimit, uuidPathParameter, UUID } from './request-input';

/** `/v1/organization/…` (CONTRACT §7): what an organization admin manages of their own organization. */

export interface ScimTokenSchema {
  id: string;
  name: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

/** The trail's entries as the API shows them: one representation with the organization export's file. */
export type ProvisioningEventSchema = ProvisioningEventRepresentation;

/** A token's name: what the admin will recognise it by (e.g. "Entra ID production"). */
const NAME_LENGTH = { min: 1, max: 200 };
/** `{name, expires_at}` is far smaller; larger bodies are 413. */
export const SCIM_TOKEN_BODY_LIMIT = 4_096;

const tokenIdParameter = uuidPathParameter('token_id', 'SCIM token');
const eventCursorParameter: ApiParameter = {
  name: 'cursor',
  in: 'query',
  description: 'The next_cursor of the previous page.',
  schema: { type: 'string' },
};

/** Organization admins only: anyone else is the plain 403 of §3. */
function requireOrganizationAdmin(account: Account): void {
  if (!account.user.organizationAdmin)
    throw new HttpProblem(403, 'Only administrators of the organization may do this');
}

/** Who did it, for the audit entry the Users service writes with a token's creation or revocation. */
const actorOf = (account: Account) => `user:${account.caller.userId}`;

function toScimToken(t: usersV1.ScimToken): ScimTokenSchema {
  return {
    id: t.id,
    name: t.name,
    created_at: apiTime(t.createTime),
    expires_at: apiTimeOrNull(t.expireTime),
    last_used_at: apiTimeOrNull(t.lastUseTime),
  };
}

/** `{name, expires_at?}`: a name of 1..200 characters (not blank), an optional RFC 3339 time in the future. */
export function validateScimTokenBody(
  body: unknown,
  now = Date.now(),
): { name: string; expiresAt: Date | undefined } | ValidationIssue[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return [{ loc: ['body'], msg: 'Input should be a valid object', type: 'model_attributes_type' }];
  const { name, expires_at: expires } = body as { name?: unknown; expires_at?: unknown };
  const issues: ValidationIssue[] = [];
  if (name === undefined) issues.push({ loc: ['body', 'name'], msg: 'Field required', type: 'missing' });
  else if (typeof name !== 'string')
    issues.push({ loc: ['body', 'name'], msg: 'Input should be a valid string', type: 'string_type' });
  else if (name.trim().length < NAME_LENGTH.min || name.length > NAME_LENGTH.max)
    issues.push({
      loc: ['body', 'name'],
      msg: `Name should have ${NAME_LENGTH.min} to ${NAME_LENGTH.max} characters, not all blank`,
      type: 'string_too_long',
    });
  let expiresAt: Date | undefined;
  if (expires !== undefined && expires !== null) {
    const checked = typeof expires === 'string' ? parseRfc3339(expires) : { problem: 'Input should be a string' };
    if ('problem' in checked)
      issues.push({ loc: ['body', 'expires_at'], msg: checked.problem, type: 'datetime_from_date_parsing' });
    else if (Date.parse(checked.iso) <= now)
      issues.push({ loc: ['body', 'expires_at'], msg: 'Should be in the future', type: 'datetime_future' });
    else expiresAt = new Date(checked.iso);
  }
  return issues.length ? issues : { name: name as string, expiresAt };
}

export const listScimTokens: RouteSpec<null> = {
  id: 'organization.scim-tokens.list',
  method: 'get',
  path: '/v1/organization/scim-tokens',
  scope: 'organization_manage',
  perMinute: 30,
  parameters: [],
  response: 'ScimTokenListResponse',
  validate: () => ({ input: null }),
  handle: async (_input, account, deps, call) => {
    requireOrganizationAdmin(account);
    const { tokens } = await deps.organizations.listScimTokens({}, call);
    return { results: tokens.map(toScimToken) };
  },
};

export const createScimToken: RouteSpec<{ name: string; expiresAt: Date | undefined }> = {
  id: 'organization.scim-tokens.create',
  method: 'post',
  path: '/v1/organization/scim-tokens',
  scope: 'organization_manage',
  perMinute: 30,
  parameters: [],
  body: { schema: 'ScimTokenCreateRequest', limitBytes: SCIM_TOKEN_BODY_LIMIT },
  status: 201,
  response: 'ScimTokenCreated',
  validate: (req) => {
    const body = jsonBody(req);
    if ('issue' in body) return { issues: [body.issue] };
    const checked = validateScimTokenBody(body.value);
    return Array.isArray(checked) ? { issues: checked } : { input: checked };
  },
  handle: async ({ name, expiresAt }, account, deps, call) => {
    requireOrganizationAdmin(account);
    const created = await deps.organizations
      .createScimToken(
        {
          name,
          ...(expiresAt ? { expireTime: dateToTimestamp(expiresAt) } : {}),
          actor: actorOf(account),
          requestId: call.requestId ?? '',
        },
        call,
      )
      .catch((err: unknown) => {
        // The organization's cap of active tokens: the body asks for one more than it may have.
        if ((err as { code?: unknown }).code === grpcStatus.FAILED_PRECONDITION)
          throw new ValidationProblem([
            { loc: ['body'], msg: decodeServiceError(err as Partial<ServiceError>).message, type: 'value_error' },
          ]);
        throw err;
      });
    return { ...toScimToken(created.token!), token: created.secret };
  },
};

export const revokeScimToken: RouteSpec<string> = {
  id: 'organization.scim-tokens.revoke',
  method: 'delete',
  path: '/v1/organization/scim-tokens/{token_id}',
  scope: 'organization_manage',
  perMinute: 30,
  parameters: [tokenIdParameter],
  status: 204,
  validate: (req) => {
    const id = String(req.params.token_id);
    if (UUID.test(id)) return { input: id };
    return {
      issues: [{ loc: ['path', 'token_id'], msg: 'Input should be a SCIM token id (a UUID)', type: 'uuid_parsing' }],
    };
  },
  handle: async (id, account, deps, call) => {
    requireOrganizationAdmin(account);
    await deps.organizations.revokeScimToken({ id, actor: actorOf(account), requestId: call.requestId ?? '' }, call);
    // Before the 204: this replica forgets the token and every other one has been told (refused on the next request).
    await deps.credentials?.revoked(id);
    return undefined;
  },
};

/** The owners of the provisioning trail, in the order they come at the same instant (newest first: users first). */
/** No event id is this large: "every event of that instant". */
const ALL_OF_THE_INSTANT = Number.MAX_SAFE_INTEGER;

/** A wire time exactly (nanoseconds: the keyset must not round), as the cursor carries it. */
function exactTime(t: WireTimestamp): string {
  return `${new Date(t.seconds * 1000).toISOString().slice(0, 19)}.${String(t.nanos).padStart(9, '0')}Z`;
}

function fromExactTime(text: string): WireTimestamp | undefined {
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/.test(text)) return undefined;
  return { seconds: Date.parse(`${text.slice(0, 19)}Z`) / 1000, nanos: Number(text.slice(20, 29)) };
}

/**
 * Where one owner's page starts, after the merged trail's position: the trail is ordered by (time, owner, id)
 * descending, so at the position's instant an owner before the position's owner is done, and one after it has all
 * of that instant still to come.
 */
function ownerKeyset(owner: TrailOwner, after: { time: WireTimestamp; owner: TrailOwner; id: number } | undefined) {
  if (!after) return { beforeId: 0 };
  const rank = TRAIL_OWNERS.indexOf(owner) - TRAIL_OWNERS.indexOf(after.owner);
  return { beforeTime: after.time, beforeId: rank === 0 ? after.id : rank > 0 ? ALL_OF_THE_INSTANT : 0 };
}

interface EventsInput {
  limit: number;
  after?: { time: WireTimestamp; owner: TrailOwner; id: number };
}

const eventsFingerprint = (userId: string | undefined) =>
  CursorCodec.fingerprint({ route: 'organization.provisioning-events', user: userId });

export const listProvisioningEvents: RouteSpec<EventsInput> = {
  id: 'organization.provisioning-events',
  method: 'get',
  path: '/v1/organization/provisioning-events',
  scope: 'organization_manage',
  perMinute: 30,
  parameters: [pageLimitParameter, eventCursorParameter],
  response: 'ProvisioningEventListResponse',
  validate: (req: Request, { deps, caller }) => {
    const issues: ValidationIssue[] = [];
    const limit = pageLimit(req);
    if (typeof limit !== 'number') issues.push(limit);
    const raw = req.query.cursor;
    const cursor = Array.isArray(raw) ? raw.at(-1) : raw;
    let after: EventsInput['after'];
    if (cursor !== undefined) {
      const position =
        typeof cursor === 'string' ? deps.cursors.decode(cursor, eventsFingerprint(caller.userId)) : undefined;
      const time = position && fromExactTime(position.sortTime);
      const owner = TRAIL_OWNERS.find((o) => o === position?.part);
      if (position && time && owner) after = { time, owner, id: position.id };
      else
        issues.push({
          loc: ['query', 'cursor'],
          msg: 'Invalid cursor: use the next_cursor of the previous page',
          type: 'value_error',
        });
    }
    return issues.length ? { issues } : { input: { limit: limit as number, ...(after ? { after } : {}) } };
  },
  handle: async ({ limit, after }, account, deps, call) => {
    requireOrganizationAdmin(account);
    const [users, groups] = await Promise.all([
      deps.users.listProvisioningEvents({ limit, ...ownerKeyset('users', after) }, call),
      deps.groups.listProvisioningEvents({ limit, ...ownerKeyset('groups', after) }, call),
    ]);
    const merged = [
      ...users.events.map((event) => ({ owner: 'users' as const, event })),
      ...groups.events.map((event) => ({ owner: 'groups' as const, event })),
    ].sort((a, b) => newestFirst(a, b));
    const results = merged.slice(0, limit);
    const hasMore = merged.length > limit || users.hasMore || groups.hasMore;
    const last = results.at(-1);
    const position: CursorPosition | undefined = last && {
      sortTime: exactTime(last.event.time!),
      id: last.event.id,
      part: last.owner,
    };
    return {
      results: results.map(({ owner, event }) => toEvent(owner, event)),
      has_more: hasMore,
      next_cursor: hasMore && position ? deps.cursors.encode(position, eventsFingerprint(account.caller.userId)) : null,
    };
  },
};

type Tagged = { owner: TrailOwner; event: scimAuditV1.ProvisioningEvent };

function newestFirst(a: Tagged, b: Tagged): number {
  const at = a.event.time!;
  const bt = b.event.time!;
  return (
    bt.seconds - at.seconds ||
    bt.nanos - at.nanos ||
    TRAIL_OWNERS.indexOf(a.owner) - TRAIL_OWNERS.indexOf(b.owner) ||
    b.event.id - a.event.id
  );
}

function toEvent(owner: TrailOwner, e: scimAuditV1.ProvisioningEvent): ProvisioningEventSchema {
  return provisioningEventRepresentation(owner, { ...e, at: apiTime(e.time) });
}
