import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // The lookups identity providers make before every change (SCIM filters `displayName eq`, `emails.value eq`)
  // must be index scans at any number of users. E-mail values are compared case-insensitively.
  await knex.raw(`CREATE INDEX users_display_name_idx ON users (lower(display_name)) WHERE deleted_at IS NULL`);
  await knex.raw(`
    CREATE INDEX users_email_values_idx ON users
      USING gin ((lower(jsonb_path_query_array(emails, '$[*].value')::text)::jsonb) jsonb_path_ops)
      WHERE deleted_at IS NULL
  `);
  // One row per write made with a write_id, in the same transaction as the write: the record of whether it
  // happened. ResolveWrite inserts 'abandoned' for an id it has not seen, so a late request can no longer apply.
  await knex.raw(`
    CREATE TABLE write_requests (
      write_id    uuid        PRIMARY KEY,
      outcome     text        NOT NULL CHECK (outcome IN ('applied', 'abandoned')),
      user_id     char(10),
      recorded_at timestamptz NOT NULL DEFAULT now()
    )
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE write_requests');
  await knex.raw('DROP INDEX users_email_values_idx');
  await knex.raw('DROP INDEX users_display_name_idx');
}
