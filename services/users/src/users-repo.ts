import { dateToTimestamp, errors, recordEvent, sqlSpans, type Knex, type TraceContext } from '@mileage/runtime';
import { filterV1, type scimAuditV1, type usersV1 } from '@mileage/proto';
import {
  auditRow,
  filterSchema,
  jsonbElements,
  sqlFilterTable,
  USER_RESOURCE_TYPE,
  type OwnerColumns,
  type SqlCondition,
} from '@mileage/scim-domain';
import { createHash, randomInt } from 'node:crypto';

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
] as const;

const SELECT_COLUMNS = COLUMNS.join(', ');

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
      // The expression of users_email_values_idx: "some address equals" as a GIN containment test.
      eqShortcut: {
        value: `(lower(jsonb_path_query_array(users.emails, '$[*].value')::text)::jsonb @> jsonb_build_array(lower(?)))`,
      },
    },
  },
  documents: { scim_attributes: 'users.scim_attributes', enterprise: 'users.enterprise' },
};
/** What a SCIM filter compares, in SQL; a declared field without a column fails here, at start-up. */
export const USER_FILTER_TABLE = sqlFilterTable(filterSchema(USER_RESOURCE_TYPE), USER_COLUMNS);
// The hot read of every /v1 request: a constant statement, prepared once per connection (pg named statements).
const GET_LIVE_SQL = `SELECT ${SELECT_COLUMNS} FROM users WHERE id = ? AND deleted_at IS NULL`;
const GET_ANY_SQL = `SELECT ${SELECT_COLUMNS} FROM users WHERE id = ?`;
// One statement text for any number of ids (an array parameter), so it too is prepared once.
const GET_MANY_SQL = `SELECT ${SELECT_COLUMNS} FROM users WHERE id = ANY(?::char(10)[]) AND deleted_at IS NULL`;

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const MAX_BATCH = 1000;

export function generateUserId(): string {
  let id = '';
  for (let i = 0; i < 10; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

function toUser(row: UserRow): usersV1.User {
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
    ...(row.external_id !== null ? { externalId: row.external_id } : {}),
    timezone: row.timezone,
    createTime: dateToTimestamp(row.created_at),
    updateTime: dateToTimestamp(row.modified_at),
    version: Number(row.version),
    ...(row.deleted_at ? { deleteTime: dateToTimestamp(row.deleted_at) } : {}),
    ...(row.enterprise ? { enterprise: row.enterprise } : {}),
    ...(row.scim_attributes ? { scimAttributes: row.scim_attributes } : {}),
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
  const insert = tx('provisioning_audit').insert({ user_id: user.id, ...auditRow(audit, user.version) });
  await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert);
}

/**
 * `user.deactivated` (docs/webhooks.md) in the transaction that deactivates the user: no group, the relay resolves the
 * groups the user belongs to when it delivers.
 */
async function recordDeactivation(tx: Knex.Transaction, userId: string): Promise<void> {
  await recordEvent(tx, { type: 'user.deactivated', groupId: null, userId, data: { user_id: userId } });
}

function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

const sql = sqlSpans('users');

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

/** Attributes no two live users share (the primary key; userName by users_user_name_key on lower(user_name)). */
const UNIQUE_ATTRIBUTES = new Set(['id', 'username']);

/**
 * Whether `filter` is a single string equality on a unique attribute (`userName eq "…"`, `id eq "…"`: an identity
 * provider's lookup before it provisions), which at most one live user matches.
 */
export function matchesAtMostOne(filter: filterV1.Filter | undefined): boolean {
  const expr = filter?.expr;
  return (
    expr?.$case === 'comparison' &&
    expr.value.operator === filterV1.Operator.OPERATOR_EQ &&
    expr.value.value?.$case === 'stringValue' &&
    UNIQUE_ATTRIBUTES.has(expr.value.attribute.toLowerCase())
  );
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

/** A list statement through knex.raw, prepared by name while the cap allows. */
function listQuery<T>(knex: Knex, text: string, bindings: readonly unknown[]) {
  const raw = knex.raw<T>(text, bindings as Knex.RawBinding[]);
  const name = listStatements.nameOf(text);
  return name ? raw.options({ name }) : raw;
}

/** Data access for the `users` schema. */
export class UsersRepository {
  constructor(private readonly knex: Knex) {}

  async get(id: string, includeDeleted = false, trace?: TraceContext): Promise<usersV1.User | undefined> {
    const text = includeDeleted ? GET_ANY_SQL : GET_LIVE_SQL;
    const result = await sql(
      trace,
      'SELECT',
      text,
      async () =>
        this.knex
          .raw<{ rows: UserRow[] }>(text, [id])
          .options({ name: includeDeleted ? 'users_get_any_v1' : 'users_get_live_v1' }),
      { retryRead: true },
    );
    const row = result.rows[0];
    return row ? toUser(row) : undefined;
  }

  /** The existing users among `ids`, in the order of `ids`, each once. */
  async getMany(ids: string[], trace?: TraceContext): Promise<usersV1.User[]> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return [];
    const { rows } = await sql(
      trace,
      'SELECT',
      GET_MANY_SQL,
      async () => this.knex.raw<{ rows: UserRow[] }>(GET_MANY_SQL, [unique]).options({ name: 'users_get_many_v1' }),
      { retryRead: true },
    );
    const byId = new Map(rows.map((r) => [r.id.trim(), toUser(r)]));
    return unique.flatMap((id) => byId.get(id) ?? []);
  }

  async create(user: usersV1.User, audit?: scimAuditV1.ProvisioningAudit, trace?: TraceContext): Promise<usersV1.User> {
    const explicitId = user.id !== '';
    for (let attempt = 0; ; attempt++) {
      const id = explicitId ? user.id : generateUserId();
      try {
        return await this.knex.transaction(async (tx) => {
          const insert = tx('users')
            .insert({ id, ...toColumns(user) })
            .returning(COLUMNS);
          const [row] = (await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert)) as UserRow[];
          const created = toUser(row!);
          await recordAudit(tx, audit, created, trace);
          return created;
        });
      } catch (err) {
        if (isUniqueViolation(err, 'users_user_name_key'))
          throw errors.alreadyExists('userName is already taken', 'USER_NAME_TAKEN');
        if (isUniqueViolation(err, 'users_pkey')) {
          if (explicitId) throw errors.alreadyExists('id is already taken', 'USER_ID_TAKEN');
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
      return await this.knex.transaction(async (tx) => {
        // Deactivating (SCIM PATCH active=false, PUT): was the user active until now? Locked, so two concurrent
        // deactivations record one event.
        const wasActive = user.active ? false : await this.lockActive(tx, user.id, trace);
        const query = tx('users')
          .update({ ...toColumns(user), modified_at: tx.fn.now(), version: tx.raw('version + 1') })
          .where({ id: user.id })
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
      if (isUniqueViolation(err, 'users_user_name_key'))
        throw errors.alreadyExists('userName is already taken', 'USER_NAME_TAKEN');
      throw err;
    }
  }

  /** Soft deletion: the user leaves provisioning and every /v1 route at once; their drives stay. */
  async delete(
    id: string,
    expectedVersion: number,
    audit?: scimAuditV1.ProvisioningAudit,
    trace?: TraceContext,
  ): Promise<usersV1.User> {
    return this.knex.transaction(async (tx) => {
      const wasActive = await this.lockActive(tx, id, trace);
      const query = tx('users')
        .update({ deleted_at: tx.fn.now(), active: false, modified_at: tx.fn.now(), version: tx.raw('version + 1') })
        .where({ id })
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

  /** A page of the live users matching `condition` (from filterToSql), by id, and how many match in all. */
  async list(
    condition: SqlCondition,
    offset: number,
    limit: number,
    trace?: TraceContext,
    options: { atMostOne?: boolean } = {},
  ): Promise<{ users: usersV1.User[]; total: number }> {
    const where = `deleted_at IS NULL AND ${condition.sql}`;
    const readPage = async (total: number) => {
      const pageText = pageQuery(where, total);
      const { rows } = await sql(
        trace,
        'SELECT',
        pageText,
        async () => listQuery<{ rows: UserRow[] }>(this.knex, pageText, [...condition.bindings, limit, offset]),
        { retryRead: true },
      );
      return rows.map(toUser);
    };
    if (options.atMostOne && offset === 0 && limit > 0) {
      // At most one live user matches (an equality on a unique column): the first page holds every match, so its
      // length is the count, and the count's statement (a second round trip) is not needed.
      const users = await readPage(1);
      return { users, total: users.length };
    }
    const countText = `SELECT count(*) AS total FROM users WHERE ${where}`;
    const countResult = await sql(
      trace,
      'SELECT',
      countText,
      async () => listQuery<{ rows: { total: string }[] }>(this.knex, countText, condition.bindings),
      { retryRead: true },
    );
    const total = Number(countResult.rows[0]!.total);
    if (limit === 0 || offset >= total) return { users: [], total };
    return { users: await readPage(total), total };
  }

  /** Whether the live user `id` is active, locking its row for the rest of the transaction. */
  private async lockActive(tx: Knex.Transaction, id: string, trace?: TraceContext): Promise<boolean> {
    const row = (await sql(trace, 'SELECT', 'SELECT active FROM users FOR UPDATE', async () =>
      tx('users').select('active').where({ id }).whereNull('deleted_at').forUpdate().first(),
    )) as { active: boolean } | undefined;
    return row?.active ?? false;
  }

  private async missing(id: string, expectedVersion: number) {
    if (expectedVersion > 0 && (await this.get(id)))
      return errors.aborted('the user was changed by someone else (version mismatch)', 'VERSION_MISMATCH');
    return errors.notFound(`user ${id} not found`, 'USER_NOT_FOUND');
  }
}
