import { scimAuditV1, type usersV1 } from '@mileage/proto';
import {
  isModelled,
  stringEquality,
  USER_RESOURCE_TYPE,
  userDocument as toDoc,
  userRepresentation,
  type Attribute,
} from '@mileage/scim-domain';
import { isUserId } from '@mileage/runtime/formats';
import { isDeepStrictEqual } from 'node:util';
import {
  AUDIT_OPERATIONS,
  auditEntry,
  type ComputeDoc,
  etag,
  listResponse,
  ownOrNotFound,
  type RequestContext,
  type ScimDeps,
  type ScimResponse,
} from './context';
import { scimErrors, ScimError } from './errors';
import { checkSelections, isObject, normalizeBody, projectFor, resourceSchema, type Doc } from './resource';
import { ENTERPRISE_SCHEMA } from './schemas';
import { ResourceHandlers } from './handlers';
import { UserReads } from './user-reads';

export const USER_RESOURCE = resourceSchema(USER_RESOURCE_TYPE);

/** Kept in a field of the owner's own (isModelled); a complex value without an owner field (name) when a part is. */
const modelled = (a: Attribute): boolean =>
  a.owner !== undefined ? isModelled(a) : (a.subAttributes ?? []).some(modelled);
const modelledNames = (attributes: Attribute[]) => attributes.filter(modelled).map((a) => a.name);

/**
 * Attributes the Users service models in fields of their own, as the declaration's owner fields say (the enterprise
 * extension is its `enterprise`); the rest travel as its scim_attributes.
 */
const MODELLED = new Set([
  ...modelledNames([...USER_RESOURCE_TYPE.common, ...USER_RESOURCE_TYPE.schema.attributes]),
  ...USER_RESOURCE_TYPE.extensions.filter((e) => e.attributes.some(isModelled)).map((e) => e.id),
]);
const MODELLED_NAME_PARTS = new Set(
  modelledNames(USER_RESOURCE_TYPE.schema.attributes.find((a) => a.name === 'name')!.subAttributes!),
);

/** The Users service's record of a canonical user document: modelled fields, the rest as scim_attributes. */
function toOwner(doc: Doc, id: string): usersV1.User {
  if (typeof doc.userName !== 'string' || doc.userName.trim() === '')
    throw scimErrors.invalidValue('"userName" is required');
  const name = (doc.name ?? {}) as Record<string, string>;
  const emails = ((doc.emails ?? []) as Record<string, unknown>[]).map((e, i) => {
    if (typeof e.value !== 'string') throw scimErrors.invalidValue(`"emails[${i}].value" is required`);
    return { value: e.value, type: typeof e.type === 'string' ? e.type : '', primary: e.primary === true };
  });
  const attributes: Doc = {};
  for (const [key, value] of Object.entries(doc)) if (!MODELLED.has(key)) attributes[key] = value;
  const nameExtras = Object.fromEntries(Object.entries(name).filter(([k]) => !MODELLED_NAME_PARTS.has(k)));
  if (Object.keys(nameExtras).length) attributes.name = nameExtras;
  return {
    id,
    userName: doc.userName,
    name: {
      givenName: name.givenName ?? '',
      familyName: name.familyName ?? '',
      ...(name.formatted !== undefined ? { formatted: name.formatted } : {}),
    },
    emails,
    active: doc.active === undefined ? true : doc.active === true,
    ...(typeof doc.displayName === 'string' ? { displayName: doc.displayName } : {}),
    ...(typeof doc.externalId === 'string' ? { externalId: doc.externalId } : {}),
    timezone: typeof doc.timezone === 'string' ? doc.timezone : 'UTC',
    version: 0,
    // The owner takes the organization from the call's context and the admin role from its own record.
    organizationId: 0,
    organizationAdmin: false,
    ...(isObject(doc[ENTERPRISE_SCHEMA]) ? { enterprise: doc[ENTERPRISE_SCHEMA] as Record<string, unknown> } : {}),
    ...(Object.keys(attributes).length ? { scimAttributes: attributes } : {}),
  };
}

export class UserHandlers extends ResourceHandlers<usersV1.User> {
  protected readonly kind = 'user';
  protected readonly schema = USER_RESOURCE;

  private readonly reads: UserReads;

  constructor(private readonly deps: ScimDeps) {
    super();
    this.reads = new UserReads(deps.users);
  }

  private location(id: string): string {
    return `${this.deps.baseUrl}/Users/${id}`;
  }

  /** The full SCIM representation of a user (RFC 7643 §4.1). */
  representation(user: usersV1.User): Doc {
    return userRepresentation(user, `${this.deps.baseUrl}/Users`);
  }

  /** The live user, or 404. */
  protected async load(id: string, ctx: RequestContext): Promise<usersV1.User> {
    if (!isUserId(id)) throw scimErrors.notFound(`User ${id} not found`);
    const user = await this.reads.byId(id, ctx.call);
    // Worded as the owner's NOT_FOUND (scimErrorFromGrpc).
    if (!user) throw scimErrors.notFound('Resource not found');
    return ownOrNotFound(user, ctx);
  }

  private respond(
    status: number,
    user: usersV1.User,
    ctx: RequestContext,
    extraHeaders: Record<string, string> = {},
  ): ScimResponse {
    const full = this.representation(user);
    return {
      status,
      headers: { ETag: etag(user.version), ...extraHeaders },
      body: projectFor(full, USER_RESOURCE, ctx.query),
    };
  }

  /**
   * A sent `id` is ignored, as RFC 7644 §3.3 asks of a readOnly attribute: user ids are global, so honouring a free one
   * would tell every organization which ids another holds (CONTRACT §7). Every new user gets an id the server issues.
   */
  async create(body: unknown, ctx: RequestContext): Promise<ScimResponse> {
    const doc = normalizeBody(body, USER_RESOURCE);
    const user = toOwner(doc, '');
    const { user: created } = await this.deps.users.createUser(
      { user, audit: auditEntry(ctx, scimAuditV1.AuditOperation.AUDIT_OPERATION_CREATE, undefined, doc) },
      ctx.call,
    );
    return this.respond(201, created!, ctx, { Location: this.location(created!.id) });
  }

  async get(id: string, ctx: RequestContext): Promise<ScimResponse> {
    checkSelections(ctx.query, USER_RESOURCE);
    const user = await this.load(id, ctx);
    const response = this.respond(200, user, ctx);
    // RFC 7644 §3.14: a client holding the current version gets 304 without the body.
    if (
      ctx.headers['if-none-match'] &&
      ctx.headers['if-none-match'].split(',').some((t) => t.trim() === etag(user.version))
    ) {
      return { status: 304, headers: response.headers ?? {} };
    }
    return response;
  }

  async list(ctx: RequestContext): Promise<ScimResponse> {
    const { startIndex, page } = this.listQuery(ctx);
    const equality = page.offset === 0 && page.limit > 0 ? stringEquality(page.filter) : undefined;
    const userName = equality?.attribute === 'username' ? equality.value : undefined;
    // A lookup's first page is its one match or none: the batched read answers it, its length the total.
    const { users, totalSize } =
      userName === undefined
        ? await this.deps.users.listUsers(page, ctx.call)
        : await this.reads.byUserName(userName, ctx.call).then((found) => {
            // Another organization's user is no match (the second wall, as for a read by id).
            const users = found && found.organizationId === ctx.organizationId ? [found] : [];
            return { users, totalSize: users.length };
          });
    const resources = users.map((u) => projectFor(this.representation(u), USER_RESOURCE, ctx.query));
    return listResponse(resources, totalSize, startIndex);
  }

  /**
   * Reads, computes the new document and writes it under the version read, with its audit entry, in one Users
   * transaction. A racing change moves the version: then read and compute again (retryStaleWrite), unless the
   * client demanded a version with If-Match.
   */
  protected async change(id: string, ctx: RequestContext, operation: 'replace' | 'patch', compute: ComputeDoc) {
    return this.atVersion(id, ctx, async (current) => {
      const before = toDoc(current);
      const after = compute(structuredClone(before));
      // Nothing changes: no write, no audit entry, the same version.
      if (isDeepStrictEqual(after, before)) return this.respond(200, current, ctx);
      const { user: updated } = await this.deps.users.updateUser(
        {
          user: toOwner(after, id),
          expectedVersion: current.version,
          audit: auditEntry(ctx, AUDIT_OPERATIONS[operation], this.representation(current), after),
        },
        ctx.call,
      );
      return this.respond(200, updated!, ctx);
    });
  }

  async delete(id: string, ctx: RequestContext): Promise<ScimResponse> {
    return this.atVersion(id, ctx, async (user) => {
      await this.deps.users.deleteUser(
        {
          id,
          expectedVersion: user.version,
          audit: auditEntry(ctx, scimAuditV1.AuditOperation.AUDIT_OPERATION_DELETE, this.representation(user)),
        },
        ctx.call,
      );
      return { status: 204 };
    });
  }
}

export { ScimError };
