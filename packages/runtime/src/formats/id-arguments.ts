// The platform's ids as arguments of a call: each refused the same way by every service that takes one.
import { errors } from '../grpc/errors';
import { isUserId } from './ids';

/** INVALID_ARGUMENT unless `id` is a user id (10 characters [A-Za-z0-9]); `field` names it in the violation. */
export function requireUserId(id: string, field = 'user_id'): void {
  if (!isUserId(id))
    throw errors.invalidArgument(`${field} must be exactly 10 characters [A-Za-z0-9]`, [
      { field, description: 'invalid user id' },
    ]);
}

/** INVALID_ARGUMENT unless `id` is a group id (a positive integer); `field` names it in the violation. */
export function requireGroupId(id: number, field = 'group_id'): void {
  if (!Number.isSafeInteger(id) || id <= 0)
    throw errors.invalidArgument(`${field} must be a positive integer`, [{ field, description: 'positive integer' }]);
}
