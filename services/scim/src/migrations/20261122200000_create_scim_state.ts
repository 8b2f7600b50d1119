import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // SCIM attributes of users that the Users service does not model (title, phoneNumbers, addresses, …).
  await knex.raw(`
    CREATE TABLE user_attributes (
      user_id    char(10)    PRIMARY KEY,
      attributes jsonb       NOT NULL CHECK (jsonb_typeof(attributes) = 'object'),
      updated_at timestamptz NOT NULL DEFAULT now()
    )
  `);
  // The provisioning client's id for a group (groups are the platform's; their externalId is SCIM's).
  await knex.raw(`
    CREATE TABLE group_attributes (
      group_id    bigint      PRIMARY KEY,
      external_id text,
      updated_at  timestamptz NOT NULL DEFAULT now()
    )
  `);
  // A write in flight: recorded before the owner service is called, settled (audited or dropped) after.
  await knex.raw(`
    CREATE TABLE pending_writes (
      write_id      uuid        PRIMARY KEY,
      actor         text        NOT NULL,
      operation     text        NOT NULL,
      resource_type text        NOT NULL,
      resource_id   text,
      request_id    text,
      before        jsonb,
      after         jsonb,
      side_effects  jsonb       NOT NULL DEFAULT '{}'::jsonb,
      created_at    timestamptz NOT NULL DEFAULT now()
    )
  `);
  await knex.raw(`CREATE INDEX pending_writes_created_idx ON pending_writes (created_at)`);
  // Every provisioning change that happened, once: who, what, before / after, when. Append-only.
  await knex.raw(`
    CREATE TABLE audit_log (
      id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      occurred_at   timestamptz NOT NULL DEFAULT now(),
      actor         text        NOT NULL,
      operation     text        NOT NULL CHECK (operation IN ('create', 'replace', 'patch', 'delete')),
      resource_type text        NOT NULL CHECK (resource_type IN ('User', 'Group')),
      resource_id   text        NOT NULL,
      request_id    text,
      write_id      uuid        NOT NULL UNIQUE,
      before        jsonb,
      after         jsonb,
      recovered     boolean     NOT NULL DEFAULT false
    )
  `);
  await knex.raw(`CREATE INDEX audit_log_resource_idx ON audit_log (resource_type, resource_id, id)`);
  await knex.raw(`
    CREATE FUNCTION audit_log_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'audit_log is append-only';
    END $$
  `);
  await knex.raw(`
    CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
      FOR EACH ROW EXECUTE FUNCTION audit_log_is_append_only()
  `);
  await knex.raw(`
    CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
      FOR EACH STATEMENT EXECUTE FUNCTION audit_log_is_append_only()
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE audit_log');
  await knex.raw('DROP FUNCTION audit_log_is_append_only');
  await knex.raw('DROP TABLE pending_writes');
  await knex.raw('DROP TABLE group_attributes');
  await knex.raw('DROP TABLE user_attributes');
}
