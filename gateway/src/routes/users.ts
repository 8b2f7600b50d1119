import { isUserId, USER_ID_PATTERN } from '@mileage/runtime/formats';
import type { Request } from 'express';
import { HttpProblem, type ValidationIssue } from '../problems';
import { toUserSchema } from '../schemas';
import type { ApiParameter, RouteSpec } from '../v1';

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
