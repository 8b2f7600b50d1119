import { status as grpcStatus } from '@grpc/grpc-js';
import type { groupsV1, usersV1 } from '@mileage/proto';
import { GROUP_RESOURCE_TYPE } from '@mileage/scim-domain';
import { isUserId } from '@mileage/runtime/formats';
import { readMemberUsers } from '@mileage/runtime/grpc';
import { isDeepStrictEqual } from 'node:util';
import {
  AUDIT_OPERATIONS,
  auditEntry,
  type ComputeDoc,
  etag,
  listResponse,
  ownOrNotFound,
  resourceMeta,
  type RequestContext,
  type ScimDeps,
  type ScimResponse,
} from './context';
import { scimErrors } from './errors';
import { checkSelections, projectFor, resourceSchema, type Doc } from './resource';
import { GROUP_SCHEMA } from './schemas';
import { ResourceHandlers } from './handlers';

export const GROUP_RESOURCE = resourceSchema(GROUP_RESOURCE_TYPE);

const GROUP_ID = /^[1-9]\d{0,17}$/;

export class GroupHandlers extends ResourceHandlers<groupsV1.Group> {
  protected readonly kind = 'group';
  protected readonly schema = GROUP_RESOURCE;

  constructor(private readonly deps: ScimDeps) {
    super();
  }

  private location(id: number | string): string {
    return `${this.deps.baseUrl}/Groups/${id}`;
  }

  private wantsMembers(ctx: RequestContext): boolean {
    const excluded = (ctx.query.get('excludedAttributes') ?? '').split(',').map((s) => s.trim().toLowerCase());
    const attributes = ctx.query.get('attributes');
    if (excluded.includes('members')) return false;
    if (attributes)
      return attributes
        .split(',')
        .some((s) => s.trim().toLowerCase().replace(`${GROUP_SCHEMA.toLowerCase()}:`, '').startsWith('members'));
    return true;
  }

  /**
   * Live users of the request's organization among `ids` (deleted ones are outside SCIM's view, another
   * organization's are as unknown as ids that never existed), as a member list shows them (readMemberUsers).
   */
  private async liveUsers(ids: string[], ctx: RequestContext): Promise<Map<string, usersV1.User>> {
    const found = new Map<string, usersV1.User>();
    for (const u of await readMemberUsers(this.deps.users, ids.filter(isUserId), ctx.call))
      if (u.organizationId === ctx.organizationId) found.set(u.id, u);
    return found;
  }

  representation(group: groupsV1.Group, users: Map<string, usersV1.User> | undefined): Doc {
    const members = users
      ? group.members.flatMap((m) => {
          const u = users.get(m.userId);
          return u
            ? [
                {
                  value: m.userId,
                  display: u.displayName || u.userName,
                  $ref: `${this.deps.baseUrl}/Users/${m.userId}`,
                  type: 'User',
                },
              ]
            : [];
        })
      : undefined;
    return {
      schemas: [GROUP_SCHEMA],
      id: String(group.id),
      ...(group.externalId ? { externalId: group.externalId } : {}),
      displayName: group.displayName,
      ...(members ? { members } : {}),
      meta: resourceMeta('Group', group, this.location(group.id)),
    };
  }

  protected async load(id: string, ctx: RequestContext): Promise<groupsV1.Group> {
    if (!GROUP_ID.test(id)) throw scimErrors.notFound(`Group ${id} not found`);
    const { group } = await this.deps.groups.getGroup({ id: Number(id) }, ctx.call);
    return ownOrNotFound(group!, ctx);
  }

  /** The group as answered; `read`: its members' users when this request has just read them (not again). */
  private async respond(
    group: groupsV1.Group,
    ctx: RequestContext,
    read?: Map<string, usersV1.User>,
  ): Promise<ScimResponse> {
    const users = this.wantsMembers(ctx)
      ? (read ??
        (await this.liveUsers(
          group.members.map((m) => m.userId),
          ctx,
        )))
      : undefined;
    const full = this.representation(group, users);
    return {
      status: 200,
      headers: { ETag: etag(group.version) },
      body: projectFor(full, GROUP_RESOURCE, ctx.query),
    };
  }

  async get(id: string, ctx: RequestContext): Promise<ScimResponse> {
    checkSelections(ctx.query, GROUP_RESOURCE);
    const group = await this.load(id, ctx);
    if (ctx.headers['if-none-match']?.split(',').some((t) => t.trim() === etag(group.version)))
      return { status: 304, headers: { ETag: etag(group.version) } };
    return this.respond(group, ctx);
  }

  async list(ctx: RequestContext): Promise<ScimResponse> {
    const { startIndex, page } = this.listQuery(ctx);
    const withMembers = this.wantsMembers(ctx);
    const { groups, totalSize } = await this.deps.groups.listGroups(
      { ...page, excludeMembers: !withMembers },
      ctx.call,
    );
    const users = withMembers
      ? await this.liveUsers(
          groups.flatMap((g) => g.members.map((m) => m.userId)),
          ctx,
        )
      : undefined;
    const resources = groups.map((g) => projectFor(this.representation(g, users), GROUP_RESOURCE, ctx.query));
    return listResponse(resources, totalSize, startIndex);
  }

  protected override checkReplacement(doc: Doc): void {
    if (typeof doc.displayName !== 'string' || doc.displayName.trim() === '')
      throw scimErrors.invalidValue('"displayName" is required');
  }

  /**
   * One PatchGroup call sends the difference (leavers, joiners, display name, externalId) atomically under the
   * version read, with the audit entry in the same Groups transaction: members who stay keep their roles, new members
   * join as drivers, and unknown user ids refuse the whole request. What travels and is written grows with the change,
   * not with the group. A racing change moves the version: read and compute again (retryStaleWrite), unless the client
   * demanded a version with If-Match.
   */
  protected async change(
    id: string,
    ctx: RequestContext,
    operation: 'replace' | 'patch',
    compute: ComputeDoc,
    body: unknown,
  ) {
    const named = namedUserIds(body);
    return this.atVersion(id, ctx, async (current) => {
      // The members' users and those the request names, in one read: newcomers need no second call to be known.
      const users = await this.liveUsers([...current.members.map((m) => m.userId), ...named], ctx);
      const visible = current.members.filter((m) => users.has(m.userId)).map((m) => ({ value: m.userId }));
      const before: Doc = {
        ...(current.externalId ? { externalId: current.externalId } : {}),
        displayName: current.displayName,
        ...(visible.length ? { members: visible } : {}),
      };
      const after = compute(structuredClone(before));
      if (typeof after.displayName !== 'string' || after.displayName.trim() === '')
        throw scimErrors.invalidValue('"displayName" is required');
      const memberIds = [
        ...new Set(
          ((after.members ?? []) as Doc[]).map((m, i) => {
            if (typeof m.value !== 'string') throw scimErrors.invalidValue(`"members[${i}].value" is required`);
            return m.value;
          }),
        ),
      ];
      const externalId = typeof after.externalId === 'string' ? after.externalId : undefined;
      const normalizedAfter: Doc = {
        ...(externalId !== undefined ? { externalId } : {}),
        displayName: after.displayName,
        ...(memberIds.length ? { members: memberIds.map((value) => ({ value })) } : {}),
      };
      if (isDeepStrictEqual(normalizedAfter, before)) return this.respond(current, ctx, users);

      // Keyed by user id: a large group's change looks each member up once, not once per member.
      const currentMembers = new Map(current.members.map((m) => [m.userId, m]));
      const newcomers = memberIds.filter((m) => !currentMembers.has(m));
      // Every newcomer is named in the body, so read above; the second read is for a body form namedUserIds misses.
      const unread = newcomers.filter((m) => isUserId(m) && !named.has(m) && !users.has(m));
      const known = unread.length ? await this.liveUsers(unread, ctx) : new Map<string, usersV1.User>();
      const unknown = [
        ...newcomers.filter((m) => !isUserId(m)),
        ...newcomers.filter((m) => isUserId(m) && !users.has(m) && !known.has(m)),
      ];
      if (unknown.length)
        throw scimErrors.invalidValue(
          `Unknown member id(s): ${unknown.slice(0, 10).join(', ')}${unknown.length > 10 ? ', …' : ''}`,
        );

      const kept = new Set(memberIds);
      // Members whose users were deleted are outside SCIM's view: no change removes them.
      const leavers = current.members.filter((m) => users.has(m.userId) && !kept.has(m.userId)).map((m) => m.userId);
      const joiners = newcomers.map((userId) => ({ userId, isAdmin: false, isDriver: true }));
      const attributes = (doc: Doc): Doc => ({
        ...(doc.externalId !== undefined ? { externalId: doc.externalId } : {}),
        displayName: doc.displayName,
      });
      const change = {
        id: current.id,
        displayName: after.displayName,
        expectedVersion: current.version,
        ...(externalId !== undefined ? { externalId } : {}),
        replaceExternalId: true,
      };
      let updated: groupsV1.Group | undefined;
      try {
        ({ group: updated } = await this.deps.groups.patchGroup(
          {
            ...change,
            removeMemberIds: leavers,
            addMembers: joiners,
            audit: auditEntry(ctx, AUDIT_OPERATIONS[operation], attributes(before), attributes(normalizedAfter)),
          },
          ctx.call,
        ));
      } catch (err) {
        if ((err as { code?: unknown }).code !== grpcStatus.UNIMPLEMENTED) throw err;
        // A Groups service of the release before (a rolling upgrade): the whole list, hidden members kept.
        const members = [
          ...memberIds.map((userId) => currentMembers.get(userId) ?? { userId, isAdmin: false, isDriver: true }),
          ...current.members.filter((m) => !users.has(m.userId) && !kept.has(m.userId)),
        ];
        ({ group: updated } = await this.deps.groups.updateGroup(
          {
            ...change,
            replaceMembers: true,
            members,
            audit: auditEntry(ctx, AUDIT_OPERATIONS[operation], this.representation(current, users), normalizedAfter),
          },
          ctx.call,
        ));
      }
      // Written under the version read, so its members are the ones just read: live ones, and newcomers found live
      // (hidden members stay out of the answer, as they stayed out of the change).
      return this.respond(updated!, ctx, new Map([...users, ...known]));
    });
  }
}

/** Every user id that a request body gives as a `value` (members' values, wherever the operation puts them). */
function namedUserIds(body: unknown, found = new Set<string>(), depth = 0): Set<string> {
  if (depth > 8 || body === null || typeof body !== 'object') return found;
  for (const [key, value] of Object.entries(body)) {
    if (typeof value === 'string') {
      if (key.toLowerCase() === 'value' && isUserId(value)) found.add(value);
    } else namedUserIds(value, found, depth + 1);
  }
  return found;
}
