import { DECLARED_ORGANIZATION_DEFAULT } from '@mileage/runtime/database';
import { outboxOrganizationExpandStatements } from '@mileage/runtime/outbox';
import type { Knex } from 'knex';

// Organizations (CONTRACT §7), expand phase: what the release before organizations keeps
// working with while the new one rolls out. Every existing row, and every row an old replica still writes, lands in
// organization 1 (column default); per-organization unique indexes are added beside the global ones, which the
// contract phase drops with the row-level security it enables.
//
// Not one transaction: each statement commits on its own, so `users` is locked exclusively only for the instant of
// each catalog change and stays readable while the indexes are built (a build blocks writes, never reads). Every
// statement can run again, so a run that stopped half way is finished by the next.
export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.raw(`
      CREATE TABLE IF NOT EXISTS organizations (
        id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name       text        NOT NULL CHECK (length(name) BETWEEN 1 AND 256),
        alias      text        NOT NULL UNIQUE CHECK (alias ~ '^[a-z0-9-]{1,63}$'),
        created_at timestamptz NOT NULL DEFAULT now()
      )
    `);
    // The default organization of an installation from before organizations: everything it had belongs to it.
    await trx.raw(`
      INSERT INTO organizations (id, name, alias) OVERRIDING SYSTEM VALUE VALUES (1, 'Demo Org', 'demo')
      ON CONFLICT DO NOTHING
    `);
    await trx.raw(`SELECT setval(pg_get_serial_sequence('organizations', 'id'), (SELECT max(id) FROM organizations))`);
  });

  for (const statement of [
    // Instant (a constant default is not written into the rows); the foreign key checks new rows at once and the
    // existing ones when the contract phase validates it.
    `ALTER TABLE users ADD COLUMN IF NOT EXISTS organization_id bigint NOT NULL DEFAULT 1`,
    `ALTER TABLE users ADD COLUMN IF NOT EXISTS organization_admin boolean NOT NULL DEFAULT false`,
    `ALTER TABLE users DROP CONSTRAINT IF EXISTS users_organization_fkey,
       ADD CONSTRAINT users_organization_fkey FOREIGN KEY (organization_id) REFERENCES organizations (id) NOT VALID`,
    // Lower-cased copies of userName and displayName, kept by a trigger whoever writes (an old replica too). Under
    // row-level security PostgreSQL lets a condition use an index only when it is leakproof: lower() is not, so
    // `lower(user_name) = lower(?)` would be checked row by row after the policy; `user_name_key = lower(?)` is
    // (users-repo.ts, STORED_LOWER_CASE).
    `ALTER TABLE users ADD COLUMN IF NOT EXISTS user_name_key text`,
    `ALTER TABLE users ADD COLUMN IF NOT EXISTS display_name_key text`,
    `CREATE OR REPLACE FUNCTION users_lookup_keys() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       NEW.user_name_key := lower(NEW.user_name);
       NEW.display_name_key := lower(NEW.display_name);
       RETURN NEW;
     END $$`,
    `CREATE OR REPLACE TRIGGER users_lookup_keys BEFORE INSERT OR UPDATE ON users
       FOR EACH ROW EXECUTE FUNCTION users_lookup_keys()`,
    // (Both functions run in this schema whatever the writing session's search_path: SET search_path FROM CURRENT.)
    // Derived data: kept even by a session replaying rows (session_replication_role = replica, as a bulk load or a
    // logical replica runs), which fires no ordinary trigger.
    `ALTER TABLE users ENABLE ALWAYS TRIGGER users_lookup_keys`,
    `ALTER TABLE users DROP CONSTRAINT IF EXISTS users_lookup_keys_check,
       ADD CONSTRAINT users_lookup_keys_check
         CHECK (user_name_key IS NOT DISTINCT FROM lower(user_name)
            AND display_name_key IS NOT DISTINCT FROM lower(display_name)) NOT VALID`,
    // The lower-cased e-mail addresses of each user, one row each, for the same reason: the GIN containment test on
    // the emails document is not leakproof either. Kept by a trigger whenever a user's addresses are written.
    `CREATE TABLE IF NOT EXISTS user_email_values (
       user_id         char(10) NOT NULL REFERENCES users (id) ON DELETE CASCADE,
       organization_id bigint   NOT NULL,
       value_key       text     NOT NULL,
       PRIMARY KEY (user_id, value_key)
     )`,
    `CREATE INDEX IF NOT EXISTS user_email_values_lookup_idx ON user_email_values (organization_id, value_key)`,
    `CREATE OR REPLACE FUNCTION users_email_values() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       -- A row from before this migration (no keys yet) gets its values on its first update: the backfill's.
       IF TG_OP = 'UPDATE' AND NEW.emails IS NOT DISTINCT FROM OLD.emails AND OLD.user_name_key IS NOT NULL THEN
         RETURN NULL;
       END IF;
       DELETE FROM user_email_values WHERE user_id = NEW.id;
       INSERT INTO user_email_values (user_id, organization_id, value_key)
         SELECT DISTINCT NEW.id, NEW.organization_id, lower(e->>'value')
           FROM jsonb_array_elements(NEW.emails) e WHERE e->>'value' IS NOT NULL;
       RETURN NULL;
     END $$`,
    `CREATE OR REPLACE TRIGGER users_email_values AFTER INSERT OR UPDATE ON users
       FOR EACH ROW EXECUTE FUNCTION users_email_values()`,
    `ALTER TABLE users ENABLE ALWAYS TRIGGER users_email_values`,
  ])
    await knex.raw(statement);
  await backfillLookupKeys(knex);

  for (const statement of [
    // userName and externalId are unique per organization among live users (CONTRACT §7).
    `CREATE UNIQUE INDEX IF NOT EXISTS users_organization_user_name_key ON users (organization_id, user_name_key)
       WHERE deleted_at IS NULL`,
    `CREATE UNIQUE INDEX IF NOT EXISTS users_organization_external_id_key ON users (organization_id, external_id)
       WHERE external_id IS NOT NULL AND deleted_at IS NULL`,
    `CREATE INDEX IF NOT EXISTS users_organization_display_name_idx ON users (organization_id, display_name_key)
       WHERE deleted_at IS NULL`,

    // SCIM secret tokens: only the SHA-256 of the secret is kept (a fast hash suits a 256-bit random secret).
    `CREATE TABLE IF NOT EXISTS scim_tokens (
       id              uuid        PRIMARY KEY,
       organization_id bigint      NOT NULL DEFAULT ${DECLARED_ORGANIZATION_DEFAULT} REFERENCES organizations (id),
       name            text        NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
       secret_sha256   bytea       NOT NULL UNIQUE CHECK (length(secret_sha256) = 32),
       created_at      timestamptz NOT NULL DEFAULT now(),
       expires_at      timestamptz,
       revoked_at      timestamptz,
       last_used_at    timestamptz
     )`,
    `CREATE INDEX IF NOT EXISTS scim_tokens_organization_idx ON scim_tokens (organization_id, created_at)
       WHERE revoked_at IS NULL`,

    // The provisioning trail: of an organization, and also of its SCIM tokens (created, revoked), beside its users.
    `ALTER TABLE provisioning_audit ADD COLUMN IF NOT EXISTS organization_id bigint NOT NULL DEFAULT 1`,
    `ALTER TABLE provisioning_audit DROP CONSTRAINT IF EXISTS provisioning_audit_organization_fkey,
       ADD CONSTRAINT provisioning_audit_organization_fkey FOREIGN KEY (organization_id) REFERENCES organizations (id)
       NOT VALID`,
    `ALTER TABLE provisioning_audit ADD COLUMN IF NOT EXISTS scim_token_id uuid`,
    `ALTER TABLE provisioning_audit ALTER COLUMN user_id DROP NOT NULL`,
    `ALTER TABLE provisioning_audit DROP CONSTRAINT IF EXISTS provisioning_audit_resource_check,
       ADD CONSTRAINT provisioning_audit_resource_check CHECK ((user_id IS NULL) <> (scim_token_id IS NULL)) NOT VALID`,
    `ALTER TABLE provisioning_audit DROP CONSTRAINT IF EXISTS provisioning_audit_operation_check,
       ADD CONSTRAINT provisioning_audit_operation_check
         CHECK (operation IN ('create', 'replace', 'patch', 'delete', 'revoke')) NOT VALID`,
    // The trail's pages, newest first (ListProvisioningEvents).
    `CREATE INDEX IF NOT EXISTS provisioning_audit_organization_time_idx
       ON provisioning_audit (organization_id, occurred_at, id)`,

    ...outboxOrganizationExpandStatements(),
  ])
    await knex.raw(statement);
}

/**
 * The lookup keys and e-mail values of the users from before them, in batches by id (each its own transaction: no
 * long lock).
 */
async function backfillLookupKeys(knex: Knex): Promise<void> {
  for (let after = ''; ;) {
    const { rows } = await knex.raw<{ rows: { last: string | null }[] }>(
      `SELECT max(id) AS last FROM (SELECT id FROM users WHERE id > ? ORDER BY id LIMIT 5000) batch`,
      [after],
    );
    const last = rows[0]!.last;
    if (last === null) return;
    // The triggers set both keys and the e-mail values.
    await knex.raw(
      `UPDATE users SET user_name_key = lower(user_name) WHERE id > ? AND id <= ? AND user_name_key IS NULL`,
      [after, last],
    );
    after = last;
  }
}

export async function down(knex: Knex): Promise<void> {
  const { rows } = await knex.raw<{ rows: unknown[] }>(
    `SELECT 1 FROM provisioning_audit WHERE scim_token_id IS NOT NULL OR operation = 'revoke' LIMIT 1`,
  );
  if (rows.length)
    throw new Error('the provisioning trail holds SCIM token entries (append-only): organizations cannot be undone');
  for (const statement of [
    `ALTER TABLE outbox DROP COLUMN IF EXISTS organization_id`,
    `DROP INDEX IF EXISTS provisioning_audit_organization_time_idx`,
    `ALTER TABLE provisioning_audit DROP CONSTRAINT IF EXISTS provisioning_audit_operation_check,
       ADD CONSTRAINT provisioning_audit_operation_check CHECK (operation IN ('create', 'replace', 'patch', 'delete'))`,
    `ALTER TABLE provisioning_audit DROP CONSTRAINT IF EXISTS provisioning_audit_resource_check`,
    `ALTER TABLE provisioning_audit ALTER COLUMN user_id SET NOT NULL`,
    `ALTER TABLE provisioning_audit DROP COLUMN IF EXISTS scim_token_id`,
    `ALTER TABLE provisioning_audit DROP COLUMN IF EXISTS organization_id`,
    `DROP TABLE IF EXISTS scim_tokens`,
    `DROP INDEX IF EXISTS users_organization_display_name_idx`,
    `DROP INDEX IF EXISTS users_organization_external_id_key`,
    `DROP INDEX IF EXISTS users_organization_user_name_key`,
    `DROP TRIGGER IF EXISTS users_email_values ON users`,
    `DROP FUNCTION IF EXISTS users_email_values()`,
    `DROP TABLE IF EXISTS user_email_values`,
    `ALTER TABLE users DROP CONSTRAINT IF EXISTS users_lookup_keys_check`,
    `DROP TRIGGER IF EXISTS users_lookup_keys ON users`,
    `DROP FUNCTION IF EXISTS users_lookup_keys()`,
    `ALTER TABLE users DROP COLUMN IF EXISTS display_name_key`,
    `ALTER TABLE users DROP COLUMN IF EXISTS user_name_key`,
    `ALTER TABLE users DROP COLUMN IF EXISTS organization_admin`,
    `ALTER TABLE users DROP COLUMN IF EXISTS organization_id`,
    `DROP TABLE IF EXISTS organizations`,
  ])
    await knex.raw(statement);
}
