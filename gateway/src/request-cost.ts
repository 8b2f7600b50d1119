import { filterCost, MAX_FILTER_COST, MAX_RESULTS, MULTI_VALUED_SCAN_COST } from '@mileage/scim-domain';

/**
 * What a request costs in a replica's share units (fair-share.ts): a point read or a write is 1; a list costs more by
 * what it makes the services and the database do. The figures are relative and deliberately coarse: the services
 * enforce the hard bounds (the SCIM filter budget, statement timeouts, their pool shares); this price only decides
 * how many of an organization's requests one replica serves at once.
 */
export const POINT_COST = 1;
/** A SCIM list scans and renders a page of resources, whatever its filter. */
const SCIM_LIST_COST = 2;
/**
 * A filter's database cost (scim-domain's filterCost: 1 an indexed equality, 8 a scan of a multi-valued attribute) per
 * unit: each unindexed comparison on a multi-valued attribute adds a unit, a lookup by userName adds none.
 */
const FILTER_COST_PER_UNIT = MULTI_VALUED_SCAN_COST;
/** Resources of a SCIM page, or drives of a /v1 page, per extra unit. */
const SCIM_RESOURCES_PER_UNIT = 100;
const DRIVES_PER_UNIT = 250;

/** A SCIM list path: a resource type with no id after it (`/Users`, `/Groups/`), any case. */
const SCIM_LIST_PATH = /^\/(users|groups)\/?$/i;

/** The price of a /scim/v2 request from its method, its path below /scim/v2 and its query string. */
export function scimRequestCost(method: string, path: string, queryString: string): number {
  if ((method !== 'GET' && method !== 'HEAD') || !SCIM_LIST_PATH.test(path)) return POINT_COST;
  const query = new URLSearchParams(queryString);
  const count = Number(query.get('count') ?? '');
  // The SCIM service answers at most MAX_RESULTS a page, whatever the count asked.
  const page = Number.isSafeInteger(count) && count > 0 ? Math.min(count, MAX_RESULTS) : 0;
  const pageUnits = Math.floor(page / SCIM_RESOURCES_PER_UNIT);
  const filter = query.get('filter');
  const cost = filter ? filterCost(filter) : undefined;
  // A filter the SCIM service refuses (unparsable, over its budget) is answered 400 before any statement runs.
  const filterUnits = cost !== undefined && cost <= MAX_FILTER_COST ? Math.floor(cost / FILTER_COST_PER_UNIT) : 0;
  return SCIM_LIST_COST + pageUnits + filterUnits;
}

/** The price of a /v1 drive page of `limit` drives (1 to 1,000): 1 up to 249, 5 for a page of 1,000. */
export function drivePageCost(limit: number): number {
  return POINT_COST + Math.floor(limit / DRIVES_PER_UNIT);
}
