import { errors } from './errors';

/** The longest page of an offset-paged list (ListUsers, ListGroups: `limit` 0..1000, 0 returns only the total). */
export const MAX_LIST_LIMIT = 1000;

/** The most ids one BatchGetUsers takes: the Users service refuses more, its callers send them in slices. */
export const MAX_BATCH_GET_USERS = 1000;
/** The most SCIM requests one ScimService.HandleRequests call carries (the gateway's reads of one turn). */
export const MAX_BATCHED_SCIM_REQUESTS = 64;
/**
 * The SCIM methods without effects: the only ones HandleRequests carries (its requests run concurrently, in no
 * order) and the only ones the gateway sends again when a call got no answer.
 */
export const SAFE_SCIM_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

/** `items` in consecutive slices of at most `size` (none when there are no items). */
export function slices<T>(items: readonly T[], size: number): T[][] {
  return Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
}

/** INVALID_ARGUMENT unless the window of an offset-paged list is `offset` ≥ 0 and 0 ≤ `limit` ≤ MAX_LIST_LIMIT. */
export function requireListWindow(request: { offset: number; limit: number }): void {
  if (request.offset < 0)
    throw errors.invalidArgument('offset must not be negative', [{ field: 'offset', description: 'must be >= 0' }]);
  if (request.limit < 0 || request.limit > MAX_LIST_LIMIT) {
    throw errors.invalidArgument(`limit must be between 0 and ${MAX_LIST_LIMIT}`, [
      { field: 'limit', description: `0..${MAX_LIST_LIMIT}` },
    ]);
  }
}
