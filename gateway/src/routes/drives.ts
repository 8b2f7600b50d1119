import {
  renderReportedDrives,
  renderUserDrivesResults,
  reportedDrivesResultsChunks,
  type RenderedReportedDrives,
} from '@mileage/drive-json';
import { drivesV1, type usersV1 } from '@mileage/proto';
import { isoToTimestamp, timestampToIso, timestampToMillis } from '@mileage/runtime/formats';
import { type CallSettings } from '@mileage/runtime/grpc';
import type { Request } from 'express';
import type { Caller } from '../auth';
import { driveListFingerprint, type CursorPosition } from '../cursor';
import { driveListParameters, parseDriveListParams, type DriveListParams } from '../drive-params';
import { HttpProblem, type ValidationIssue } from '../problems';
import { toDriverSchema } from '../schemas';
import { RenderedJson, type RouteSpec, type V1Deps } from '../v1';
import { reportedDrivesPageCost, userDrivesPageCost } from '../request-cost';
import { groupIdParameter, requireGroupAdmin, validateGroupIdParam } from './groups';
import { userIdParameter, validateUserIdParam } from './users';

export interface ListInput {
  params: DriveListParams;
  fingerprint: string;
  position?: CursorPosition;
}

const CLASSIFICATION_FILTERS = {
  business: drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_BUSINESS,
  personal: drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_PERSONAL,
  all: drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_ALL,
};

/** Parses the list parameters and the cursor, which must come from the same query (fingerprint). */
function parseList(
  req: Request,
  deps: V1Deps,
  withClassification: boolean,
  scope: Record<string, string | number>,
  earlier: ValidationIssue[] = [],
): { input: ListInput } | { issues: ValidationIssue[] } {
  const parsed = parseDriveListParams(req, withClassification);
  const issues = [...earlier, ...('issues' in parsed ? parsed.issues : [])];
  if ('issues' in parsed || issues.length) return { issues };
  const p = parsed.input;
  const fingerprint = driveListFingerprint(scope, {
    ...p,
    classification: withClassification ? p.classification : undefined,
  });
  if (p.cursor === undefined) return { input: { params: p, fingerprint } };
  const position = deps.cursors.decode(p.cursor, fingerprint);
  if (!position) {
    return {
      issues: [
        {
          loc: ['query', 'cursor'],
          msg: 'Invalid cursor: use the next_cursor of the previous page of the same query',
          type: 'value_error',
        },
      ],
    };
  }
  return { input: { params: p, fingerprint, position } };
}

/** A list below a path id (the user's, the group's): the id's issues and the list's are reported together. */
function parseListBelow<Id>(
  req: Request,
  deps: V1Deps,
  withClassification: boolean,
  pathId: { input: Id } | { issues: ValidationIssue[] },
  scope: (id: Id | undefined) => Record<string, string | number>,
): { input: ListInput & { id: Id } } | { issues: ValidationIssue[] } {
  const id = 'input' in pathId ? pathId.input : undefined;
  const list = parseList(req, deps, withClassification, scope(id), 'issues' in pathId ? pathId.issues : []);
  return 'issues' in list ? list : { input: { ...list.input, id: id as Id } };
}

function listRequest(input: ListInput) {
  const p = input.params;
  return {
    limit: p.limit,
    sortField: p.sortField === 'ended' ? drivesV1.SortField.SORT_FIELD_ENDED : drivesV1.SortField.SORT_FIELD_MODIFIED,
    ...(p.after ? { after: isoToTimestamp(p.after) } : {}),
    ...(p.before ? { before: isoToTimestamp(p.before) } : {}),
    ...(input.position
      ? {
          afterPosition: {
            sortTime: isoToTimestamp(input.position.sortTime),
            id: input.position.id,
            ...(input.position.epoch
              ? {
                  restoreEpoch: input.position.epoch.id,
                  readTime: isoToTimestamp(input.position.epoch.readAt),
                }
              : {}),
          },
        }
      : {}),
    ...(p.includeDeleted ? { includeDeleted: true } : {}),
    // The service renders the page's JSON, which the gateway passes through (docs/architecture.md, "Drives and
    // sync-safe paging").
    renderJson: true,
  };
}

function nextCursor(
  deps: Pick<V1Deps, 'cursors'>,
  input: ListInput,
  hasMore: boolean,
  next: drivesV1.PagePosition | undefined,
): string | null {
  return hasMore && next?.sortTime
    ? deps.cursors.encode(
        {
          sortTime: timestampToIso(next.sortTime),
          id: next.id,
          // The restore epoch the page was read in (CONTRACT §8), when the Drives service names it.
          ...(next.restoreEpoch && next.readTime
            ? { epoch: { id: next.restoreEpoch, readAt: timestampToIso(next.readTime) } }
            : {}),
        },
        input.fingerprint,
      )
    : null;
}

const RESULTS_OPEN = Buffer.from('{"results":');
const NO_RESULTS = Buffer.from('[]');

/** The page's answer around its `results` array: `{"results":[…],"has_more":…,"next_cursor":…}`. */
function pageBody(results: Uint8Array[], hasMore: boolean, next: string | null): RenderedJson {
  return new RenderedJson([
    RESULTS_OPEN,
    ...results,
    Buffer.from(`,"has_more":${hasMore},"next_cursor":${JSON.stringify(next)}}`),
  ]);
}

/** A page of reported drives with their drivers; `page` is the ListReportedDrives call, already under way. */
async function reportedDrivesPage(
  page: Promise<drivesV1.ListReportedDrivesResponse>,
  input: ListInput,
  deps: Pick<V1Deps, 'drivers' | 'cursors'>,
  call: CallSettings,
): Promise<RenderedJson> {
  const answer = await page;
  // A Drives service older than render_json answers objects: rendered here with the same functions.
  const rendered: RenderedReportedDrives =
    answer.resultsJson.length > 0 ? answer : renderReportedDrives(answer.reportedDrives, answer.tombstones);
  // Through the drivers' loader: the drivers of every page asked for in the same turn are read in one BatchGetUsers,
  // only what a driver shows (USER_VIEW_DRIVER: toDriverSchema's fields).
  const driverIds = [...new Set(rendered.driverSlots.map((slot) => slot.driverId))];
  const drivers = new Map<string, usersV1.User>();
  for (const u of await Promise.all(driverIds.map((id) => deps.drivers.load(id, call)))) if (u) drivers.set(u.id, u);
  // A driver's JSON depends only on the driver and the offset at the drive's end: rendered once per pair and page.
  const driverJson = new Map<string, Buffer>();
  const results = reportedDrivesResultsChunks(rendered, (driverId, at) => {
    const driver = toDriverSchema(driverId, drivers.get(driverId), at ? timestampToMillis(at) : 0);
    const key = `${driverId} ${driver.timezone_offset}`;
    let json = driverJson.get(key);
    if (!json) driverJson.set(key, (json = Buffer.from(JSON.stringify(driver))));
    return json;
  });
  return pageBody(results, answer.hasMore, nextCursor(deps, input, answer.hasMore, answer.nextPosition));
}

export const listUserDrives: RouteSpec<ListInput & { id: string }> = {
  id: 'drives.user',
  method: 'get',
  path: '/v1/users/{user_id}/drives',
  scope: 'drives_read',
  perMinute: 20,
  cost: (input) => userDrivesPageCost(input.params.limit),
  parameters: [userIdParameter, ...driveListParameters(true)],
  response: 'GetDrivesResponse',
  validate: (req, { deps }) =>
    parseListBelow(req, deps, true, validateUserIdParam(req), (user) => ({ route: 'user-drives', user: user ?? '' })),
  handle: async (input, account, deps, call) => {
    if (input.id !== account.caller.userId)
      throw new HttpProblem(403, "Access to another user's drives is not allowed");
    const page = await deps.drives.listUserDrives(
      {
        userId: input.id,
        classification: CLASSIFICATION_FILTERS[input.params.classification],
        ...listRequest(input),
      },
      call,
    );
    // A Drives service older than render_json answers objects: rendered here with the same function.
    const results =
      page.resultsJson.length > 0 ? page.resultsJson : renderUserDrivesResults(page.drives, page.tombstones);
    return pageBody([results], page.hasMore, nextCursor(deps, input, page.hasMore, page.nextPosition));
  },
};

export const listGroupReportedDrives: RouteSpec<ListInput & { id: number }> = {
  id: 'drives.group-reported',
  method: 'get',
  path: '/v1/groups/{group_id}/reported-drives',
  scope: 'groups_read_reported_drives',
  perMinute: 60,
  cost: (input) => reportedDrivesPageCost(input.params.limit),
  parameters: [groupIdParameter, ...driveListParameters(false)],
  response: 'GetReportedDrivesResponse',
  validate: (req, { deps }) =>
    parseListBelow(req, deps, false, validateGroupIdParam(req), (group) => ({
      route: 'group-reported',
      group: group ?? 0,
    })),
  handle: (input, account, deps, call) => groupReportedDrivesPage(input, account.caller.userId, deps, call),
};

/**
 * A group's page of reported drives, for `userId` if that user administers the group (else 403). Exported
 * (`@mileage/gateway/drive-pages`) for the bench's floor server, which answers the route with the same calls and bytes.
 */
export async function groupReportedDrivesPage(
  input: ListInput & { id: number },
  userId: string,
  deps: Pick<V1Deps, 'groups' | 'drives' | 'drivers' | 'cursors'>,
  call: CallSettings,
): Promise<RenderedJson> {
  // The admin check and the page are independent: both calls go out at once, and the page is used (or its error
  // reported) only once the check has passed.
  const check = deps.groups.checkGroupAdmin({ groupId: input.id, userId }, call);
  const page = deps.drives.listReportedDrives({ groupIds: [input.id], ...listRequest(input) }, call);
  page.catch(() => {}); // settled below when the check passes; ignored when it does not
  await requireGroupAdmin(check, 'Only admins of this group may read its reported drives');
  return reportedDrivesPage(page, input, deps, call);
}

/** The alpha route, kept for existing integrations: the reported drives of every group the caller administers. */
export const listAllReportedDrives: RouteSpec<ListInput> = {
  id: 'drives.all-reported',
  method: 'get',
  path: '/v1/drives',
  scope: 'groups_read_reported_drives',
  perMinute: 60,
  cost: (input) => reportedDrivesPageCost(input.params.limit),
  parameters: driveListParameters(false),
  response: 'GetReportedDrivesResponse',
  deprecatedSince: '2026-11-22T00:00:00Z',
  validate: (req, { deps, caller }: { deps: V1Deps; caller: Caller }) =>
    parseList(req, deps, false, { route: 'all-reported', caller: caller.subject }),
  handle: async (input, account, deps, call) => {
    const { groups } = await deps.groups.listAdministeredGroups({ userId: account.caller.userId }, call);
    if (groups.length === 0) return pageBody([NO_RESULTS], false, null);
    const groupIds = groups.map((g) => g.id);
    return reportedDrivesPage(
      deps.drives.listReportedDrives({ groupIds, ...listRequest(input) }, call),
      input,
      deps,
      call,
    );
  },
};
