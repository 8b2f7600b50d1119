/**
 * What a request costs in a replica's share units (fair-share.ts): a point read or a write is 1; a list costs more by
 * what it makes the services and the database do. The figures are relative and deliberately coarse: the services
 * enforce the hard bounds (the SCIM filter budget, statement timeouts, their pool shares); this price only decides
 * how many of an organization's requests one replica serves at once.
 */
export const POINT_COST = 1;
/** A SCIM list scans and renders a page of resources, whatever its filter. */
const SCIM_LIST_COST = 2;
/** Each unindexed term of a SCIM filter (`co`, `sw`, `ew`, `pr`) makes PostgreSQL read every resource's documents. */
const UNINDEXED_TERM_COST = 1;
/** Resources of a SCIM page, or drives of a /v1 page, per extra unit. */
const SCIM_RESOURCES_PER_UNIT = 100;
const DRIVES_PER_UNIT = 250;

/** A SCIM list path: a resource type with no id after it (`/Users`, `/Groups/`), any case. */
const SCIM_LIST_PATH = /^\/(users|groups)\/?$/i;
/** The operators that no index serves: each term using one costs a scan of the organization's resources. */
const UNINDEXED_OPERATOR = /\s(co|sw|ew)\s|\spr(?=\s|\)|\]|$)/gi;

/** The price of a /scim/v2 request from its method, its path below /scim/v2 and its query string. */
export function scimRequestCost(method: string, path: string, queryString: string): number {
  if ((method !== 'GET' && method !== 'HEAD') || !SCIM_LIST_PATH.test(path)) return POINT_COST;
  const query = new URLSearchParams(queryString);
  const count = Number(query.get('count') ?? '');
  const pageUnits = Number.isSafeInteger(count) && count > 0 ? Math.floor(count / SCIM_RESOURCES_PER_UNIT) : 0;
  const filter = query.get('filter') ?? '';
  // Outside quoted values: an operator word inside a compared string is no term.
  const terms = filter.replace(/"(?:[^"\\]|\\.)*"/g, '""').match(UNINDEXED_OPERATOR)?.length ?? 0;
  return SCIM_LIST_COST + pageUnits + terms * UNINDEXED_TERM_COST;
}

/** The price of a /v1 drive page of `limit` drives (1 to 1,000): 1 up to 249, 5 for a page of 1,000. */
export function drivePageCost(limit: number): number {
  return POINT_COST + Math.floor(limit / DRIVES_PER_UNIT);
}
