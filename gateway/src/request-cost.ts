import { DEFAULT_COUNT, filterCost, MAX_FILTER_COST, MAX_RESULTS, SCALAR_COMPARISON_COST } from '@mileage/scim-domain';

/**
 * What a request costs in a replica's share units (fair-share.ts), roughly the CPU it takes of the whole path: a unit
 * is a point read (`GET /v1/users/{id}`, ~0.7 ms of CPU over every process of the path, docs/operations.md, "Capacity"),
 * and a list costs by what it makes the services and the database do, from the same measurements: a drive of a user's
 * page ~1/15 of a unit, a reported drive (its driver, its review comments) ~1/4, a SCIM resource rendered ~1/8, a scan of
 * a multi-valued attribute in a SCIM filter 4. Coarse on purpose: the services enforce the hard bounds (the SCIM filter
 * budget, statement timeouts, their pool shares); this price only decides how many of an organization's requests one
 * replica serves at once.
 */
export const POINT_COST = 1;
/** A SCIM list's own work (the filter's translation, the count, the page's frame), whatever its page. */
const SCIM_LIST_COST = 2;
const SCIM_RESOURCES_PER_UNIT = 8;
/** scim-domain's filterCost counts an indexed equality 1 and a scan of a multi-valued attribute 8: half of it. */
const FILTER_COST_PER_UNIT = 2;
const USER_DRIVES_PER_UNIT = 15;
const REPORTED_DRIVES_PER_UNIT = 4;

/** A SCIM list path: a resource type with no id after it (`/Users`, `/Groups/`), any case. */
const SCIM_LIST_PATH = /^\/(users|groups)\/?$/i;

/** The price of a /scim/v2 request from its method, its path below /scim/v2 and its query string. */
export function scimRequestCost(method: string, path: string, queryString: string): number {
  if ((method !== 'GET' && method !== 'HEAD') || !SCIM_LIST_PATH.test(path)) return POINT_COST;
  const query = new URLSearchParams(queryString);
  const count = Number(query.get('count') ?? DEFAULT_COUNT);
  // The SCIM service answers at most MAX_RESULTS a page, whatever the count asked.
  const page = Number.isSafeInteger(count) && count > 0 ? Math.min(count, MAX_RESULTS) : DEFAULT_COUNT;
  const filter = query.get('filter');
  const cost = filter ? filterCost(filter) : undefined;
  // A filter the SCIM service refuses (unparsable, over its budget) is answered 400 before any statement runs.
  if (cost !== undefined && cost > MAX_FILTER_COST) return SCIM_LIST_COST;
  const filterUnits = cost === undefined ? 0 : Math.floor(cost / FILTER_COST_PER_UNIT);
  // A lookup (one indexed equality: `userName eq`, what identity providers send most) renders what matches, at most a
  // resource; any other list may render its whole page.
  const rendered = cost === SCALAR_COMPARISON_COST ? 1 : page;
  return SCIM_LIST_COST + Math.ceil(rendered / SCIM_RESOURCES_PER_UNIT) + filterUnits;
}

/** The price of a page of `limit` (1 to 1,000) of a user's own drives: 3 for 20, 8 for 100, 68 for 1,000. */
export function userDrivesPageCost(limit: number): number {
  return POINT_COST + Math.ceil(limit / USER_DRIVES_PER_UNIT);
}

/** The price of a page of `limit` (1 to 1,000) reported drives: 6 for 20, 26 for 100, 251 for 1,000. */
export function reportedDrivesPageCost(limit: number): number {
  return POINT_COST + Math.ceil(limit / REPORTED_DRIVES_PER_UNIT);
}
