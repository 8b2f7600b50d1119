import type { usersV1 } from '@mileage/proto';
import { dateToTimestamp, newScimSecretToken } from '@mileage/runtime/formats';
import { errors } from '@mileage/runtime/grpc';
import { type Knex } from '@mileage/runtime/database';
import { type TraceContext } from '@mileage/runtime/telemetry';
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { sql } from './database';

interface OrganizationRow {
  id: string;
  name: string;
  alias: string;
  created_at: Date;
}

function toOrganization(row: OrganizationRow): usersV1.Organization {
  return { id: Number(row.id), name: row.name, alias: row.alias, createTime: dateToTimestamp(row.created_at) };
}

/** The organizations: a directory every request may consult (no row-level security: it holds no tenant's data). */
export class OrganizationsRepository {
  constructor(private readonly knex: Knex) {}

  async get(key: { id: number } | { alias: string }, trace?: TraceContext): Promise<usersV1.Organization | undefined> {
    const query = this.knex<OrganizationRow>('organizations').where(key).first();
    const row = await sql(trace, 'SELECT', query.toSQL().sql, async () => query);
    return row && toOrganization(row);
  }

  /** ALREADY_EXISTS when the alias is taken. */
  async create(name: string, alias: string, trace?: TraceContext): Promise<usersV1.Organization> {
    const insert = this.knex<OrganizationRow>('organizations').insert({ name, alias }).returning('*');
    try {
      const [row] = (await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert)) as OrganizationRow[];
      return toOrganization(row!);
    } catch (err) {
      if ((err as { code?: string }).code === '23505')
        throw errors.alreadyExists(`the alias ${alias} is taken`, 'ORGANIZATION_ALIAS_TAKEN');
      throw err;
    }
  }
}

/** How many unrevoked, unexpired SCIM tokens an organization may have at once (rotation with overlap needs two). */
export const MAX_ACTIVE_SCIM_TOKENS = 20;
export const ACTIVE = 'revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())';
const TOKEN_COLUMNS = 'id, organization_id, name, created_at, expires_at, revoked_at, last_used_at';

interface ScimTokenRow {
  id: string;
  organization_id: string;
  name: string;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

function toScimToken(row: ScimTokenRow): usersV1.ScimToken {
  return {
    id: row.id,
    name: row.name,
    createTime: dateToTimestamp(row.created_at),
    ...(row.expires_at ? { expireTime: dateToTimestamp(row.expires_at) } : {}),
    ...(row.last_used_at ? { lastUseTime: dateToTimestamp(row.last_used_at) } : {}),
    organizationId: Number(row.organization_id),
  };
}

/** The SHA-256 of a secret, as stored and as the gateway sends it to ResolveScimToken. */
export function secretSha256(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** Who created or revoked a token, for its entry in the provisioning trail. */
export interface TokenAudit {
  actor: string;
  requestId: string;
}

/**
 * The SCIM secret tokens of one organization: construct it over the transaction of `inOrganization(knex,
 * organizationId, …)`. Every create and revoke writes its entry in the provisioning trail in the same transaction.
 */
export class ScimTokensRepository {
  constructor(
    private readonly db: Knex.Transaction,
    private readonly organizationId: number,
  ) {}

  /** Mints a token; its secret is returned only here (256 random bits; only its SHA-256 is kept). */
  async create(
    token: { name: string; expiresAt?: Date },
    audit: TokenAudit,
    trace?: TraceContext,
  ): Promise<{ token: usersV1.ScimToken; secret: string }> {
    // The organization's row, locked: concurrent creates of one organization count one after the other.
    const lock = this.db('organizations').select('id').where({ id: this.organizationId }).forNoKeyUpdate().first();
    if (!(await sql(trace, 'SELECT', lock.toSQL().sql, async () => lock)))
      throw errors.notFound('the organization does not exist', 'ORGANIZATION_NOT_FOUND');
    const countText = `SELECT count(*) AS active FROM scim_tokens WHERE organization_id = ? AND ${ACTIVE}`;
    const { rows } = await sql(trace, 'SELECT', countText, async () =>
      this.db.raw<{ rows: { active: string }[] }>(countText, [this.organizationId]),
    );
    if (Number(rows[0]!.active) >= MAX_ACTIVE_SCIM_TOKENS)
      throw errors.failedPrecondition(
        `the organization already has ${MAX_ACTIVE_SCIM_TOKENS} active SCIM tokens, the most allowed: revoke one first`,
        'TOO_MANY_SCIM_TOKENS',
      );
    const secret = newScimSecretToken();
    const insert = this.db('scim_tokens')
      .insert({
        id: randomUUID(),
        organization_id: this.organizationId,
        name: token.name,
        secret_sha256: secretSha256(secret),
        expires_at: token.expiresAt ?? null,
      })
      .returning(TOKEN_COLUMNS.split(', '));
    const [row] = (await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert)) as ScimTokenRow[];
    const created = toScimToken(row!);
    await this.recordAudit('create', row!, audit, trace);
    return { token: created, secret };
  }

  /** The active tokens, newest first. */
  async listActive(trace?: TraceContext): Promise<usersV1.ScimToken[]> {
    const text = `SELECT ${TOKEN_COLUMNS} FROM scim_tokens WHERE organization_id = ? AND ${ACTIVE}
                   ORDER BY created_at DESC, id DESC`;
    const { rows } = await sql(trace, 'SELECT', text, async () =>
      this.db.raw<{ rows: ScimTokenRow[] }>(text, [this.organizationId]),
    );
    return rows.map(toScimToken);
  }

  /** Revokes an active token; undefined when the organization has no such active token. */
  async revoke(id: string, audit: TokenAudit, trace?: TraceContext): Promise<usersV1.ScimToken | undefined> {
    const text = `UPDATE scim_tokens SET revoked_at = now() WHERE id = ? AND organization_id = ? AND ${ACTIVE}
                  RETURNING ${TOKEN_COLUMNS}`;
    const { rows } = await sql(trace, 'UPDATE', text, async () =>
      this.db.raw<{ rows: ScimTokenRow[] }>(text, [id, this.organizationId]),
    );
    if (!rows[0]) return undefined;
    await this.recordAudit('revoke', rows[0], audit, trace);
    return toScimToken(rows[0]);
  }

  private async recordAudit(
    operation: 'create' | 'revoke',
    row: ScimTokenRow,
    audit: TokenAudit,
    trace?: TraceContext,
  ): Promise<void> {
    const insert = this.db('provisioning_audit').insert({
      organization_id: this.organizationId,
      scim_token_id: row.id,
      actor: audit.actor,
      operation,
      request_id: audit.requestId || null,
      ...(operation === 'create'
        ? { after: JSON.stringify({ name: row.name, expires_at: row.expires_at }) }
        : { before: JSON.stringify({ name: row.name, expires_at: row.expires_at }) }),
    });
    await sql(trace, 'INSERT', insert.toSQL().sql, async () => insert);
  }
}

/**
 * The active token whose secret has the SHA-256 `hash`, whichever organization it belongs to (not one being
 * offboarded), in a transaction that
 * sees every organization (acrossOrganizations): the gateway knows the organization of a SCIM request only from it.
 * Its use is recorded at most once a minute (a token in use would otherwise write on every request).
 */
export async function resolveScimToken(
  trx: Knex.Transaction,
  hash: Buffer,
  trace?: TraceContext,
): Promise<usersV1.ScimToken | undefined> {
  // A token of an organization being offboarded is refused like a revoked one (and its use not recorded).
  const text = `SELECT ${TOKEN_COLUMNS}, secret_sha256, (${ACTIVE}) AND NOT EXISTS (SELECT 1 FROM organization_offboardings o
       WHERE o.organization_id = scim_tokens.organization_id) AS active
     FROM scim_tokens WHERE secret_sha256 = ?`;
  const { rows } = await sql(trace, 'SELECT', text, async () =>
    trx.raw<{ rows: (ScimTokenRow & { secret_sha256: Buffer; active: boolean })[] }>(text, [hash]),
  );
  const row = rows[0];
  // The index found the row by the hash; the hash is compared once more in constant time, whatever the index did.
  if (!row || !timingSafeEqual(row.secret_sha256, hash) || !row.active) return undefined;
  const touch = `UPDATE scim_tokens SET last_used_at = now()
                  WHERE id = ? AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
              RETURNING last_used_at`;
  const touched = await sql(trace, 'UPDATE', touch, async () =>
    trx.raw<{ rows: { last_used_at: Date }[] }>(touch, [row.id]),
  );
  return toScimToken({ ...row, last_used_at: touched.rows[0]?.last_used_at ?? row.last_used_at });
}
