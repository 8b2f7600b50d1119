import { isUserId, USER_ID_PATTERN } from '@mileage/runtime/formats';
import type { Request } from 'express';
import type { CallSettings } from '@mileage/runtime/grpc';
import { writeParts } from '../paged-stream';
import { HttpProblem, type ValidationIssue } from '../problems';
import { toUserSchema } from '../schemas';
import { StreamedBody, type Account, type ApiParameter, type RouteSpec, type V1Deps } from '../v1';

export const userIdParameter: ApiParameter = {
  name: 'user_id',
  in: 'path',
  required: true,
  description: 'Platform user id.',
  // components.schemas.UserId: USER_ID_PATTERN
  schema: { $ref: '#/components/schemas/UserId' },
};

export function validateUserIdParam(req: Request): { input: string } | { issues: ValidationIssue[] } {
  const userId = req.params.user_id;
  if (typeof userId === 'string' && isUserId(userId)) return { input: userId };
  return {
    issues: [
      {
        loc: ['path', 'user_id'],
        msg: `String should match pattern '${USER_ID_PATTERN.source}'`,
        type: 'string_pattern_mismatch',
      },
    ],
  };
}

export const getMe: RouteSpec<null> = {
  id: 'users.me',
  method: 'get',
  path: '/v1/users/me',
  scope: 'users_read',
  perMinute: 30,
  parameters: [],
  response: 'UserSchema',
  validate: () => ({ input: null }),
  handle: async (_input, account) => toUserSchema(account.user),
};

export const getUser: RouteSpec<string> = {
  id: 'users.get',
  method: 'get',
  path: '/v1/users/{user_id}',
  scope: 'users_read',
  perMinute: 30,
  parameters: [userIdParameter],
  response: 'UserSchema',
  validate: validateUserIdParam,
  handle: async (userId, account) => {
    if (userId !== account.caller.userId) throw new HttpProblem(403, "Access to another user's profile is not allowed");
    return toUserSchema(account.user);
  },
};

/**
 * A person's own copy (CONTRACT §8): the caller's profile, then every drive of theirs, as JSON Lines written while
 * the Drives service's pages are read, each page asked for only once the reader has taken the one before
 * (paged-stream.ts). The pages are keyset-paged on the drive id up to the newest drive at the start, so a drive
 * changed meanwhile is neither lost nor doubled (the Drives service's ExportUserDrives).
 */
export const exportMe: RouteSpec<null> = {
  id: 'users.me.export',
  method: 'get',
  path: '/v1/users/me/export',
  scope: ['users_read', 'drives_read'],
  perHour: 2,
  parameters: [],
  response: 'PersonalCopyLine',
  responseType: 'application/x-ndjson',
  validate: () => ({ input: null }),
  handle: async (_input, account, deps, call) =>
    new StreamedBody('application/x-ndjson', (res) => writeParts(res, personalCopy(account, deps, call))),
};

async function* personalCopy(account: Account, deps: V1Deps, call: CallSettings): AsyncGenerator<Uint8Array> {
  yield Buffer.from(`${JSON.stringify({ user: toUserSchema(account.user) })}\n`);
  let afterId = 0;
  let upToId = 0;
  for (;;) {
    const page = await deps.drives.exportUserDrives(
      { userId: account.caller.userId, afterId, upToId, pageSize: 0 },
      call,
    );
    yield page.drivesNdjson;
    if (!page.hasMore) return;
    ({ lastId: afterId, upToId } = page);
  }
}
