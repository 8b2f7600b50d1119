import { paging, type RequestContext, type ScimResponse } from './context';
import { ScimError, scimErrors } from './errors';
import { isObject } from './resource';
import { LIST_SCHEMA } from './schemas';

/** A resource type's handlers, as far as a search reads them. */
type List = { list(ctx: RequestContext): Promise<ScimResponse> };

/** Searches every resource type (RFC 7644 §3.4.3 at the root): users first, then groups, one index space. */
export function rootSearch(users: List, groups: List): (ctx: RequestContext) => Promise<ScimResponse> {
  return async (ctx: RequestContext): Promise<ScimResponse> => {
    const { startIndex, count } = paging(ctx.query);
    const part = async (list: (c: RequestContext) => Promise<ScimResponse>, offset: number, limit: number) => {
      const query = new URLSearchParams(ctx.query);
      query.set('startIndex', String(offset + 1));
      query.set('count', String(limit));
      try {
        return (await list({ ...ctx, query, lenientSelection: true })).body as {
          totalResults: number;
          Resources: unknown[];
        };
      } catch (err) {
        // A filter naming attributes another resource type does not have matches none of that type.
        if (err instanceof ScimError && err.scimType === 'invalidFilter') return { totalResults: 0, Resources: [] };
        throw err;
      }
    };
    const userPage = await part((c) => users.list(c), startIndex - 1, count);
    const groupOffset = Math.max(0, startIndex - 1 - userPage.totalResults);
    const groupPage = await part((c) => groups.list(c), groupOffset, Math.max(0, count - userPage.Resources.length));
    const resources = [...userPage.Resources, ...groupPage.Resources];
    return {
      status: 200,
      body: {
        schemas: [LIST_SCHEMA],
        totalResults: userPage.totalResults + groupPage.totalResults,
        startIndex,
        itemsPerPage: resources.length,
        Resources: resources,
      },
    };
  };
}

/** A SearchRequest body (POST …/.search) read as the query parameters of a GET. */
export function searchContext(ctx: RequestContext, body: unknown): RequestContext {
  if (!isObject(body)) throw scimErrors.invalidSyntax('The search request must be a JSON object');
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(body)) {
    const name = ['filter', 'startIndex', 'count', 'attributes', 'excludedAttributes', 'sortBy', 'sortOrder'].find(
      (n) => n.toLowerCase() === key.toLowerCase(),
    );
    if (!name || value === null) continue;
    // A list (attributes, excludedAttributes) of names; anything else in it has the wrong type (String() of an
    // object whose toString is not a function throws).
    if (Array.isArray(value) && value.every((v) => typeof v === 'string' || typeof v === 'number'))
      query.set(name, value.map(String).join(','));
    else if (typeof value === 'string' || typeof value === 'number') query.set(name, String(value));
    else throw scimErrors.invalidValue(`"${key}" has the wrong type`);
  }
  return { ...ctx, query };
}
