import { dateToTimestamp } from '@mileage/runtime/formats';
import { errors } from '@mileage/runtime/grpc';
import { recordEvent } from '@mileage/runtime/outbox';
import { statementsOf, type Knex, type ReadStatements } from '@mileage/runtime/database';
import { type TraceContext } from '@mileage/runtime/telemetry';
import { refuseReplayedAttestation } from '@mileage/runtime/audit';
import { filterV1, scimAuditV1, usersV1 } from '@mileage/proto';
import {
  auditRow,
  filterSchema,
  jsonbElements,
  sqlFilterTable,
  USER_RESOURCE_TYPE,
  type OwnerColumns,
  type SqlCondition,
  stringEquality,
  uniqueAttributes,
} from '@mileage/scim-domain';
import { createHash, randomInt } from 'node:crypto';
import { sql } from './database';

interface UserRow {
  id: string;
  user_name: string;
  given_name: string;
  family_name: string;
  formatted_name: string | null;
  display_name: string | null;
  emails: usersV1.Email[];
  active: boolean;
  external_id: string | null;
  timezone: string;
  enterprise: Record<string, unknown> | null;
  scim_attributes: Record<string, unknown> | null;
  created_at: Date;
  modified_at: Date;
  version: string;
  deleted_at: Date | null;
  organization_id: string;
  organization_admin: boolean;
}

const COLUMNS = [
  'id',
  'user_name',
  'given_name',
  'family_name',
  'formatted_name',
  'display_name',
  'emails',
  'active',
  'external_id',
  'timezone',
  'enterprise',
  'scim_attributes',
  'created_at',
  'modified_at',
  'version',
  'deleted_at',
  'organization_id',
  'organization_admin',
] as const;

export const SELECT_COLUMNS = COLUMNS.join(', ');

/** Where this table keeps the fields of the SCIM User declaration (@mileage/scim-domain): its owner fields → SQL. */
export const USER_COLUMNS: OwnerColumns = {
  scalars: {
    id: 'users.id',
    user_name: 'users.user_name',
    external_id: 'users.external_id',
    display_name: 'users.display_name',
    'name.given_name': "nullif(users.given_name, '')",
    'name.family_name': "nullif(users.family_name, '')",
    'name.formatted': 'users.formatted_name',
    timezone: 'users.timezone',
    active: 'users.active',
    create_time: 'users.created_at',
    update_time: 'users.modified_at',
  },
  multi: {
    emails: {
      ...jsonbElements('users.emails', 'email'),
      // "Some address equals", through the lower-cased addresses of user_email_values (a leakproof, indexed lookup
      // under row-level security: the migration 20261126100000 says why).
      eqShortcut: {
        value: `EXISTS (SELECT 1 FROM user_email_values e WHERE e.user_id = users.id AND e.organization_id = users.organization_id AND e.value_key = lower(?))`,
      },
    },
  },
  documents: { scim_attributes: 'users.scim_attributes', enterprise: 'users.enterprise' },
};
/**
 * The case-insensitive comparisons a filter makes (`lower(<column>) … lower(?)`), read from the lower-cased copies the
 * table keeps (trigger users_lookup_keys; CHECK users_lookup_keys_check holds them equal). Under row-level security
 * PostgreSQL uses an index only for a leakproof condition, and lower() on a column is not one: `userName eq` would
 * be checked row by row after the organization's policy; `users.user_name_key = lower(?)` uses its index.
 */
const STORED_LOWER_CASE: readonly [string, string][] = [
  ['lower(users.user_name)', 'users.user_name_key'],
  ['lower(users.display_name)', 'users.display_name_key'],
];

/** `condition` with its case-insensitive comparisons on the stored lower-cased columns (STORED_LOWER_CASE). */
export function onStoredLowerCase(condition: SqlCondition): SqlCondition {
  const sql = STORED_LOWER_CASE.reduce(
    (text, [expression, column]) => text.replaceAll(expression, column),
    condition.sql,
  );
  return { sql, bindings: condition.bindings };
}

/** What a SCIM filter compares, in SQL; a declared field without a column fails here, at start-up. */
export const USER_FILTER_TABLE = sqlFilterTable(filterSchema(USER_RESOURCE_TYPE), USER_COLUMNS);
// The hot read of every /v1 request: a constant statement, prepared once per connection (pg named statements).
const GET_LIVE_SQL = `SELECT ${SELECT_COLUMNS} FROM users WHERE id = ? AND organization_id = ? AND deleted_at IS NULL`;
const GET_ANY_SQL = `SELECT ${SELECT_COLUMNS} FROM users WHERE id = ? AND organization_id = ?`;
// A user whichever organization they belong to (the gateway loading its verified caller): ids are global.
const FIND_LIVE_SQL = `SELECT ${SELECT_COLUMNS} FROM users WHERE id = ? AND deleted_at IS NULL`;
const FIND_ANY_SQL = `SELECT ${SELECT_COLUMNS} FROM users WHERE id = ?`;
// Live users by a list of ids, one statement text for any number of them (an array parameter), so it too is prepared
// once: across organizations, or in one. Per view, only the columns it answers.
const findManyLive = (columns: string) =>
  `SELECT ${columns} FROM users WHERE id = ANY(?::char(10)[]) AND deleted_at IS NULL`;
const getManyLive = (columns: string) =>
  `SELECT ${columns} FROM users WHERE id = ANY(?::char(10)[]) AND organization_id = ? AND deleted_at IS NULL`;
/** USER_VIEW_MEMBER's columns: what a group's member list shows. */
const MEMBER_COLUMNS = [
  'id',
  'user_name',
  'display_name',
  'formatted_name',
  'organization_id',
] as const satisfies readonly (typeof COLUMNS)[number][];
type MemberRow = Pick<UserRow, (typeof MEMBER_COLUMNS)[number]>;
/** USER_VIEW_DRIVER's columns: what a drive's driver shows. */
const DRIVER_COLUMNS = [
  'id',
  'user_name',
  'given_name',
  'family_name',
  'formatted_name',
  'display_name',
  'emails',
  'active',
  'timezone',
  'organization_id',
] as const satisfies readonly (typeof COLUMNS)[number][];
type DriverRow = Pick<UserRow, (typeof DRIVER_COLUMNS)[number]>;
/** USER_VIEW_ACCOUNT's columns: what the gateway needs of a caller's own account. */
const ACCOUNT_COLUMNS = [
  ...DRIVER_COLUMNS,
  'organization_admin',
] as const satisfies readonly (typeof COLUMNS)[number][];
type AccountRow = Pick<UserRow, (typeof ACCOUNT_COLUMNS)[number]>;

// The live users of an organization named by any of a list of userNames (SCIM's lookups of one turn), each with the
// position of the name that found it; `user_name_key` is the stored lower case its unique index covers. The names are
// lower-cased apart (MATERIALIZED): under row-level security a join condition holding lower(), which is not
// leakproof, could not probe the index (the generic plan read the organization's every user: plans.test.ts).
export const FIND_BY_USER_NAMES_SQL = `WITH sent AS MATERIALIZED (
    SELECT lower(name) AS name_key, position FROM unnest(?::text[]) WITH ORDINALITY AS given(name, position))
  SELECT ${SELECT_COLUMNS}, sent.position FROM sent JOIN users ON users.user_name_key = sent.name_key
  WHERE users.organization_id = ? AND users.deleted_at IS NULL ORDER BY sent.position`;

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function generateUserId(): string {
  let id = '';
  for (let i = 0; i < 10; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

/** What a driver shows (USER_VIEW_DRIVER), and the whole user's part of it. */
function driverFields(row: DriverRow) {
  return {
    id: row.id,
    userName: row.user_name,
    name: {
      givenName: row.given_name,
      familyName: row.family_name,
      ...(row.formatted_name !== null ? { formatted: row.formatted_name } : {}),
    },
    emails: row.emails.map((e) => ({ value: e.value, type: e.type ?? '', primary: Boolean(e.primary) })),
    active: row.active,
    ...(row.display_name !== null ? { displayName: row.display_name } : {}),
    timezone: row.timezone,
    organizationId: Number(row.organization_id),
  };
}

export function toUser(row: UserRow): usersV1.User {
  return {
    ...driverFields(row),
    ...(row.external_id !== null ? { externalId: row.external_id } : {}),
    createTime: dateToTimestamp(row.created_at),
    updateTime: dateToTimestamp(row.modified_at),
    version: Number(row.version),
    ...(row.deleted_at ? { deleteTime: dateToTimestamp(row.deleted_at) } : {}),
    ...(row.enterprise ? { enterprise: row.enterprise } : {}),
    ...(row.scim_attributes ? { scimAttributes: row.scim_attributes } : {}),
    organizationAdmin: row.organization_admin,
  };
}

function toColumns(user: usersV1.User) {
  return {
    user_name: user.userName,
    given_name: user.name?.givenName ?? '',
    family_name: user.name?.familyName ?? '',
    formatted_name: user.name?.formatted ?? null,
    display_name: user.displayName ?? null,
    emails: JSON.stringify(user.emails.map((e) => ({ value: e.value, type: e.type, primary: e.primary }))),
    active: user.active,
    external_id: user.externalId ?? null,
    timezone: user.timezone || 'UTC',
    enterprise: user.enterprise ? JSON.stringify(user.enterprise) : null,
    scim_attributes:
      user.scimAttributes && Object.keys(user.scimAttributes).length ? JSON.stringify(user.scimAttributes) : null,
  };
}

/** The provisioning audit entry of a write, in the write's own transaction: both happen or neither does. */
async function recordAudit(
  tx: Knex.Transaction,
  audit: scimAuditV1.ProvisioningAudit | undefined,
  user: usersV1.User,
  trace: TraceContext | undefined,
): Promise<void> {
  if (!audit) return;
  const insert = tx('provisioning_audit').insert({
    organization_id: user.organizationId,
    user_id: user.id,
    ...auditRow(audit, user.version),
  });
  await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert).catch(refuseReplayedAttestation);
}

/**
 * `user.deactivated` (docs/webhooks.md) in the transaction that deactivates the user: no group, the relay resolves the
 * groups the user belongs to when it delivers. The event belongs to the transaction's declared organization (the
 * outbox column's default).
 */
async function recordDeactivation(tx: Knex.Transaction, userId: string): Promise<void> {
  await recordEvent(tx, { type: 'user.deactivated', groupId: null, userId, data: { user_id: userId } });
}

function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

const userNameTaken = () => errors.alreadyExists('userName is already taken', 'USER_NAME_TAKEN');
/**
 * The unique indexes whose violation means a value is taken in the caller's own organization. The global userName
 * index of the release before organizations stays until the contract phase (an old replica relies on it meanwhile).
 */
const TAKEN_BY_INDEX: Record<string, () => Error> = {
  users_organization_user_name_key: userNameTaken,
  users_user_name_key: userNameTaken,
  users_organization_external_id_key: () =>
    errors.alreadyExists('externalId is already taken', 'USER_EXTERNAL_ID_TAKEN'),
};

function takenError(err: unknown): Error | undefined {
  const constraint = (err as { constraint?: string })?.constraint;
  return isUniqueViolation(err) && constraint ? TAKEN_BY_INDEX[constraint]?.() : undefined;
}

/** A user of an organization that does not exist (a foreign key violation of users.organization_id). */
function unknownOrganization(err: unknown): Error | undefined {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23503' && e.constraint === 'users_organization_fkey'
    ? errors.notFound('the organization does not exist', 'ORGANIZATION_NOT_FOUND')
    : undefined;
}

/** Matches up to this many are fetched through the filter's own index and sorted; more walk the primary key in order. */
export const SMALL_MATCH = 10_000;

/**
 * The statement of one page of a filtered list, chosen by the count of matches (known first). With ORDER BY id LIMIT
 * the planner may walk the primary key and test every row when it misjudges a filter's selectivity (it does for the
 * e-mail containment test at a million users); a few matches are therefore collected through the filter's index
 * first and then sorted, while a broad filter keeps the ordered walk, which stops after one page.
 */
export function pageQuery(where: string, total: number): string {
  return total <= SMALL_MATCH
    ? `WITH matches AS MATERIALIZED (SELECT ${SELECT_COLUMNS} FROM users WHERE ${where}) SELECT * FROM matches ORDER BY id LIMIT ? OFFSET ?`
    : `SELECT ${SELECT_COLUMNS} FROM users WHERE ${where} ORDER BY id LIMIT ? OFFSET ?`;
}

/** The rows a list of one organization reads (its first binding is the organization). */
export const LIVE_USERS_OF_ORGANIZATION = 'organization_id = ? AND deleted_at IS NULL';

/**
 * Attributes no two live users of an organization share, as the User declaration says (id: the primary key; userName
 * and externalId: the unique indexes users_organization_user_name_key on user_name_key, its lower case, and
 * users_organization_external_id_key).
 */
const UNIQUE_ATTRIBUTES = uniqueAttributes(USER_RESOURCE_TYPE);

/**
 * Whether `filter` is a single string equality on a unique attribute (`userName eq "…"`, `id eq "…"`: an identity
 * provider's lookup before it provisions), which at most one live user matches.
 */
export function matchesAtMostOne(filter: filterV1.Filter | undefined): boolean {
  const equality = stringEquality(filter);
  return equality !== undefined && UNIQUE_ATTRIBUTES.has(equality.attribute);
}

/** How many distinct list statements (filter shapes) are prepared; any further shape is sent unnamed. */
export const MAX_PREPARED_LISTS = 200;

/**
 * Names under which list statements are prepared (once per connection, as the hot reads are), until `max` shapes
 * have names: a filter's values travel as bindings, so a statement's text varies only with the filter's shape (SCIM
 * clients send a few: userName eq, externalId eq, …), and the cap bounds what each connection keeps prepared.
 */
export class StatementNames {
  private readonly names = new Map<string, string>();
  constructor(
    private readonly prefix: string,
    private readonly max: number,
  ) {}

  /** The statement's name (the same for the same text), or undefined once `max` other texts have one. */
  nameOf(text: string): string | undefined {
    let name = this.names.get(text);
    if (name === undefined && this.names.size < this.max) {
      name = `${this.prefix}${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      this.names.set(text, name);
    }
    return name;
  }
}

const listStatements = new StatementNames('users_list_', MAX_PREPARED_LISTS);

/** A list statement, prepared by name while the cap allows. */
function listQuery<R>(run: ReadStatements, text: string, bindings: readonly unknown[]) {
  return run<R>(text, bindings, listStatements.nameOf(text));
}

/**
 * Whose users a read finds: one organization's, or (ANY_ORGANIZATION, in readAcrossOrganizations) those of every
 * organization: the gateway loading its verified callers, whose organizations it does not know yet (user ids are
 * global).
 */
export const ANY_ORGANIZATION = 'any organization';
export type UserScope = number | typeof ANY_ORGANIZATION;

/**
 * The user `id` within `scope` (the hot read of every /v1 request), or undefined; one read by primary key. `run`: the
 * statements of a light read, or of a knex transaction (statementsOf).
 */
export async function readUser(
  run: ReadStatements,
  scope: UserScope,
  id: string,
  includeDeleted: boolean,
  trace?: TraceContext,
): Promise<usersV1.User | undefined> {
  const [text, bindings, name] =
    scope === ANY_ORGANIZATION
      ? [
          includeDeleted ? FIND_ANY_SQL : FIND_LIVE_SQL,
          [id],
          includeDeleted ? 'users_find_any_v1' : 'users_find_live_v1',
        ]
      : [
          includeDeleted ? GET_ANY_SQL : GET_LIVE_SQL,
          [id, scope],
          includeDeleted ? 'users_get_any_v2' : 'users_get_live_v2',
        ];
  const { rows } = await sql(trace, 'SELECT', text, () => run<UserRow>(text, bindings, name));
  return rows[0] && toUser(rows[0]);
}

/** The live users within `scope` among `ids`, in the order of `ids`, each once (unknown ones omitted). */
export async function readUsers(
  run: ReadStatements,
  scope: UserScope,
  ids: string[],
  trace?: TraceContext,
  view: usersV1.UserView = usersV1.UserView.USER_VIEW_FULL,
): Promise<usersV1.User[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const read = VIEW_READS[view] ?? FULL_READS;
  const [text, bindings, name] =
    scope === ANY_ORGANIZATION
      ? [read.anyOrganization, [unique], read.names[0]]
      : [read.inOrganization, [unique, scope], read.names[1]];
  const { rows } = await sql(trace, 'SELECT', text, () => run<UserRow>(text, bindings, name));
  return inRequestOrder(unique, rows, read.toMessage);
}

/** USER_VIEW_MEMBER: the other fields keep their defaults (a name only for its formatted form). */
function toMember(row: MemberRow): usersV1.User {
  return {
    ...usersV1.User.fromPartial({}),
    id: row.id,
    userName: row.user_name,
    ...(row.display_name !== null ? { displayName: row.display_name } : {}),
    ...(row.formatted_name !== null ? { name: { givenName: '', familyName: '', formatted: row.formatted_name } } : {}),
    organizationId: Number(row.organization_id),
  };
}

/** USER_VIEW_DRIVER: the other fields keep their defaults. */
function toDriver(row: DriverRow): usersV1.User {
  return { ...usersV1.User.fromPartial({}), ...driverFields(row) };
}

/** USER_VIEW_ACCOUNT: the driver's fields, whether the user administers the organization, whether it is suspended. */
function toAccount(row: AccountRow & { organization_suspended?: boolean }): usersV1.User {
  return {
    ...toDriver(row),
    organizationAdmin: row.organization_admin,
    organizationSuspended: row.organization_suspended === true,
  };
}

interface UserReads {
  anyOrganization: string;
  inOrganization: string;
  names: readonly [string, string];
  toMessage(row: UserRow): usersV1.User;
}

/** readUsers' statements (across organizations, in one; each prepared under its name) and rows → messages, per view. */
function viewReads(columns: string, names: UserReads['names'], toMessage: UserReads['toMessage']): UserReads {
  return { anyOrganization: findManyLive(columns), inOrganization: getManyLive(columns), names, toMessage };
}
const FULL_READS = viewReads(SELECT_COLUMNS, ['users_find_many_live_v1', 'users_get_many_v2'], toUser);
const MEMBER_READS = viewReads(
  MEMBER_COLUMNS.join(', '),
  ['users_find_many_live_members_v1', 'users_get_many_members_v1'],
  toMember,
);
const DRIVER_READS = viewReads(
  DRIVER_COLUMNS.join(', '),
  ['users_find_many_live_drivers_v1', 'users_get_many_drivers_v1'],
  toDriver,
);
const ACCOUNT_READS = {
  ...viewReads(
    ACCOUNT_COLUMNS.join(', '),
    ['users_find_many_live_accounts_v2', 'users_get_many_accounts_v1'],
    toAccount,
  ),
  // The callers' accounts carry their organization's suspension (an offboarding, offboarding-repo.ts): the gateway
  // refuses the credential on the request that reads it, with no read of its own.
  anyOrganization: findManyLive(
    `${ACCOUNT_COLUMNS.join(', ')}, EXISTS (SELECT 1 FROM organization_offboardings o
       WHERE o.organization_id = users.organization_id) AS organization_suspended`,
  ),
};
/** Per view its reads; a view this build does not know (a newer caller's) is answered in full. */
const VIEW_READS: Partial<Record<usersV1.UserView, UserReads>> = {
  [usersV1.UserView.USER_VIEW_MEMBER]: MEMBER_READS,
  [usersV1.UserView.USER_VIEW_DRIVER]: DRIVER_READS,
  [usersV1.UserView.USER_VIEW_ACCOUNT]: ACCOUNT_READS,
};

/**
 * The live users of `organizationId` named by `userNames` (case-insensitively), each with the index of the name that
 * found it, in the order of `userNames`: one statement for SCIM's `userName eq` lookups of one turn.
 */
export async function findUsersByUserName(
  run: ReadStatements,
  organizationId: number,
  userNames: string[],
  trace?: TraceContext,
): Promise<{ index: number; user: usersV1.User }[]> {
  if (userNames.length === 0) return [];
  const { rows } = await sql(trace, 'SELECT', FIND_BY_USER_NAMES_SQL, () =>
    run<UserRow & { position: string }>(FIND_BY_USER_NAMES_SQL, [userNames, organizationId], 'users_find_by_names_v2'),
  );
  return rows.map((row) => ({ index: Number(row.position) - 1, user: toUser(row) }));
}

/** Rows as users in the order of `ids` (char(10) ids trimmed). */
function inRequestOrder<R extends { id: string }>(
  ids: string[],
  rows: R[],
  toMessage: (row: R) => usersV1.User,
): usersV1.User[] {
  const byId = new Map(rows.map((r) => [r.id.trim(), toMessage(r)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/**
 * A page of the live users of `organizationId` that match `condition`, and how many match. With `atMostOne` (an
 * equality on a unique column) the first page is the count too: one statement instead of two.
 */
export async function listUsers(
  run: ReadStatements,
  organizationId: number,
  condition: SqlCondition,
  offset: number,
  limit: number,
  trace?: TraceContext,
  options: { atMostOne?: boolean } = {},
): Promise<{ users: usersV1.User[]; total: number }> {
  const where = `${LIVE_USERS_OF_ORGANIZATION} AND ${onStoredLowerCase(condition).sql}`;
  const bindings = [organizationId, ...condition.bindings];
  const readPage = async (total: number) => {
    const pageText = pageQuery(where, total);
    const { rows } = await sql(trace, 'SELECT', pageText, () =>
      listQuery<UserRow>(run, pageText, [...bindings, limit, offset]),
    );
    return rows.map(toUser);
  };
  if (options.atMostOne && offset === 0 && limit > 0) {
    const users = await readPage(1);
    return { users, total: users.length };
  }
  const countText = `SELECT count(*) AS total FROM users WHERE ${where}`;
  const countResult = await sql(trace, 'SELECT', countText, () =>
    listQuery<{ total: string }>(run, countText, bindings),
  );
  const total = Number(countResult.rows[0]!.total);
  if (limit === 0 || offset >= total) return { users: [], total };
  return { users: await readPage(total), total };
}

/**
 * Data access for the `users` schema, inside one organization: construct it over the transaction of
 * `inOrganization(knex, organizationId, …)`. Every statement also names the organization itself, so the indexes that
 * lead with it serve them, and row-level security is the second wall.
 */
export class UsersRepository {
  constructor(
    private readonly db: Knex.Transaction,
    private readonly organizationId: number,
  ) {}

  async get(id: string, includeDeleted = false, trace?: TraceContext): Promise<usersV1.User | undefined> {
    return readUser(await statementsOf(this.db), this.organizationId, id, includeDeleted, trace);
  }

  /**
   * Inserts a user; a caller's `id` is kept unless it is taken. Taken by a user of this organization (deleted ones
   * too): ALREADY_EXISTS. Taken by another organization's user: a fresh id. Only the operator's own callers (seeding,
   * tests) send one: SCIM ignores a sent id, as keeping a free one would tell which ids exist elsewhere (CONTRACT §7).
   */
  async create(user: usersV1.User, audit?: scimAuditV1.ProvisioningAudit, trace?: TraceContext): Promise<usersV1.User> {
    for (let attempt = 0; ; attempt++) {
      const explicitId = attempt === 0 && user.id !== '';
      const id = explicitId ? user.id : generateUserId();
      try {
        // A savepoint: a refused insert leaves the organization's transaction usable for the next attempt.
        return await this.db.transaction(async (tx) => {
          const insert = tx('users')
            .insert({ id, organization_id: this.organizationId, ...toColumns(user) })
            .returning(COLUMNS);
          const [row] = (await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert)) as UserRow[];
          const created = toUser(row!);
          await recordAudit(tx, audit, created, trace);
          return created;
        });
      } catch (err) {
        const refused = takenError(err) ?? unknownOrganization(err);
        if (refused) throw refused;
        if (isUniqueViolation(err, 'users_pkey')) {
          if (explicitId && (await this.exists(id, trace)))
            throw errors.alreadyExists('id is already taken', 'USER_ID_TAKEN');
          if (attempt < 5) continue;
        }
        throw err;
      }
    }
  }

  async update(
    user: usersV1.User,
    expectedVersion: number,
    audit?: scimAuditV1.ProvisioningAudit,
    trace?: TraceContext,
  ): Promise<usersV1.User> {
    try {
      return await this.db.transaction(async (tx) => {
        // Deactivating (SCIM PATCH active=false, PUT): was the user active until now? Locked, so two concurrent
        // deactivations record one event.
        const wasActive = user.active ? false : await this.lockActive(tx, user.id, trace);
        const query = tx('users')
          .update({ ...toColumns(user), modified_at: tx.fn.now(), version: tx.raw('version + 1') })
          .where({ id: user.id, organization_id: this.organizationId })
          .whereNull('deleted_at')
          .returning(COLUMNS);
        if (expectedVersion > 0) query.andWhere('version', expectedVersion);
        const rows = (await sql(trace, 'UPDATE', query.toSQL().sql, async () => query)) as UserRow[];
        if (!rows[0]) throw await this.missing(user.id, expectedVersion);
        const updated = toUser(rows[0]);
        await recordAudit(tx, audit, updated, trace);
        if (wasActive) await recordDeactivation(tx, updated.id);
        return updated;
      });
    } catch (err) {
      throw takenError(err) ?? err;
    }
  }

  /** Soft deletion: the user leaves provisioning and every /v1 route at once; their drives stay. */
  async delete(
    id: string,
    expectedVersion: number,
    audit?: scimAuditV1.ProvisioningAudit,
    trace?: TraceContext,
  ): Promise<usersV1.User> {
    return this.db.transaction(async (tx) => {
      const wasActive = await this.lockActive(tx, id, trace);
      const query = tx('users')
        .update({ deleted_at: tx.fn.now(), active: false, modified_at: tx.fn.now(), version: tx.raw('version + 1') })
        .where({ id, organization_id: this.organizationId })
        .whereNull('deleted_at')
        .returning(COLUMNS);
      if (expectedVersion > 0) query.andWhere('version', expectedVersion);
      const rows = (await sql(trace, 'UPDATE', query.toSQL().sql, async () => query)) as UserRow[];
      if (!rows[0]) throw await this.missing(id, expectedVersion);
      const deleted = toUser(rows[0]);
      await recordAudit(tx, audit, deleted, trace);
      if (wasActive) await recordDeactivation(tx, deleted.id);
      return deleted;
    });
  }

  /**
   * Grants or takes back the organization admin role of a live user of this organization (not a SCIM attribute: the
   * version stays), with an audit entry when it changes. Undefined when there is no such user.
   */
  async setOrganizationAdmin(
    id: string,
    organizationAdmin: boolean,
    audit: Pick<scimAuditV1.ProvisioningAudit, 'actor' | 'requestId'>,
    trace?: TraceContext,
  ): Promise<usersV1.User | undefined> {
    return this.db.transaction(async (tx) => {
      // The role before the change, read under the row's lock: concurrent changes are recorded one after the other.
      const text = `UPDATE users SET organization_admin = ?
        FROM (SELECT id, organization_admin AS was_admin FROM users
               WHERE id = ? AND organization_id = ? AND deleted_at IS NULL FOR UPDATE) before
       WHERE users.id = before.id
      RETURNING ${COLUMNS.map((c) => `users.${c}`).join(', ')}, before.was_admin`;
      const { rows } = await sql(trace, 'UPDATE', text, async () =>
        tx.raw<{ rows: (UserRow & { was_admin: boolean })[] }>(text, [organizationAdmin, id, this.organizationId]),
      );
      const row = rows[0];
      if (!row) return undefined;
      const user = toUser(row);
      if (row.was_admin !== organizationAdmin)
        await recordAudit(
          tx,
          {
            ...audit,
            operation: scimAuditV1.AuditOperation.AUDIT_OPERATION_PATCH,
            before: { organizationAdmin: row.was_admin },
            after: { organizationAdmin },
          },
          user,
          trace,
        );
      return user;
    });
  }

  /** Whether `id` is taken by a user of this organization, live or deleted. */
  private async exists(id: string, trace?: TraceContext): Promise<boolean> {
    return Boolean(await this.get(id, true, trace));
  }

  /** Whether the live user `id` is active, locking its row for the rest of the transaction. */
  private async lockActive(tx: Knex.Transaction, id: string, trace?: TraceContext): Promise<boolean> {
    const row = (await sql(trace, 'SELECT', 'SELECT active FROM users FOR UPDATE', async () =>
      tx('users')
        .select('active')
        .where({ id, organization_id: this.organizationId })
        .whereNull('deleted_at')
        .forUpdate()
        .first(),
    )) as { active: boolean } | undefined;
    return row?.active ?? false;
  }

  private async missing(id: string, expectedVersion: number) {
    if (expectedVersion > 0 && (await this.get(id)))
      return errors.aborted('the user was changed by someone else (version mismatch)', 'VERSION_MISMATCH');
    return errors.notFound(`user ${id} not found`, 'USER_NOT_FOUND');
  }
}
