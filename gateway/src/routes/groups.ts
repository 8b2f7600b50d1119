import type { groupsV1 } from '@mileage/proto';
import { apiTime } from '@mileage/runtime/formats';

import { type CallSettings, readMemberUsers } from '@mileage/runtime/grpc';
import type { Request } from 'express';
import { HttpProblem, type ValidationIssue } from '../problems';
import type { ApiParameter, RouteSpec, V1Deps } from '../v1';

/** GroupSchema of the External API. */
export interface GroupSchema {
  id: string;
  display_name: string;
  members: { value: string; display: string | null; is_admin: boolean; is_driver: boolean }[];
  meta: { resourceType: 'Group'; created: string; lastModified: string; location: string };
}

const GROUP_ID = /^[1-9][0-9]{0,15}$/;

export const groupIdParameter: ApiParameter = {
  name: 'group_id',
  in: 'path',
  required: true,
  description: 'Group id (a positive integer).',
  schema: { type: 'string', pattern: GROUP_ID.source },
};

export function validateGroupIdParam(req: Request): { input: number } | { issues: ValidationIssue[] } {
  const raw = req.params.group_id;
  if (typeof raw === 'string' && GROUP_ID.test(raw) && Number.isSafeInteger(Number(raw))) return { input: Number(raw) };
  return { issues: [{ loc: ['path', 'group_id'], msg: 'Input should be a positive integer', type: 'int_parsing' }] };
}

function baseUrl(req: Request): string {
  return `${req.protocol}://${req.get('host') ?? 'localhost'}`;
}

/** Members' display names for all the groups of a response, read together (readMemberUsers). */
async function toGroupSchemas(
  groups: groupsV1.Group[],
  req: Request,
  deps: V1Deps,
  call: CallSettings,
): Promise<GroupSchema[]> {
  const ids = groups.flatMap((g) => g.members.map((m) => m.userId));
  const users = new Map((await readMemberUsers(deps.users, ids, call)).map((u) => [u.id, u]));
  const base = baseUrl(req);
  return groups.map((g) => ({
    id: String(g.id),
    display_name: g.displayName,
    members: g.members.map((m) => {
      const user = users.get(m.userId);
      return {
        value: m.userId,
        display: user ? (user.displayName ?? user.name?.formatted ?? user.userName) : null,
        is_admin: m.isAdmin,
        is_driver: m.isDriver,
      };
    }),
    meta: {
      resourceType: 'Group',
      created: apiTime(g.createTime),
      lastModified: apiTime(g.updateTime),
      location: `${base}/v1/groups/${g.id}`,
    },
  }));
}

export const listGroups: RouteSpec<Request> = {
  id: 'groups.list',
  method: 'get',
  path: '/v1/groups',
  scope: 'groups_read',
  perMinute: 30,
  parameters: [],
  response: 'GroupListResponse',
  validate: (req) => ({ input: req }),
  handle: async (req, account, deps, call) => {
    const { groups } = await deps.groups.listAdministeredGroups({ userId: account.caller.userId }, call);
    return { resources: await toGroupSchemas(groups, req, deps, call) };
  },
};

export const getGroup: RouteSpec<{ id: number; req: Request }> = {
  id: 'groups.get',
  method: 'get',
  path: '/v1/groups/{group_id}',
  scope: 'groups_read',
  perMinute: 30,
  parameters: [groupIdParameter],
  response: 'GroupListResponse',
  validate: (req) => {
    const parsed = validateGroupIdParam(req);
    return 'issues' in parsed ? parsed : { input: { id: parsed.input, req } };
  },
  handle: async ({ id, req }, account, deps, call) => {
    await requireGroupAdmin(
      deps.groups.checkGroupAdmin({ groupId: id, userId: account.caller.userId }, call),
      'Only admins of this group may read it',
    );
    const { group } = await deps.groups.getGroup({ id }, call);
    return { resources: await toGroupSchemas([group!], req, deps, call) };
  },
};

/** Admins of the group only; an unknown group gets the same 403 as any other (no existence oracle, CONTRACT §2). */
export async function requireGroupAdmin(
  check: Promise<{ exists: boolean; isAdmin: boolean }>,
  refusal: string,
): Promise<void> {
  const { exists, isAdmin } = await check;
  if (!exists || !isAdmin) throw new HttpProblem(403, refusal);
}
