import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE users (
      id             char(10)    PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9]{10}$'),
      user_name      text        NOT NULL CHECK (length(user_name) BETWEEN 1 AND 256),
      given_name     text        NOT NULL DEFAULT '',
      family_name    text        NOT NULL DEFAULT '',
      formatted_name text,
      display_name   text,
      emails         jsonb       NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(emails) = 'array'),
      active         boolean     NOT NULL DEFAULT true,
      external_id    text,
      timezone       text        NOT NULL DEFAULT 'UTC',
      enterprise     jsonb,
      created_at     timestamptz NOT NULL DEFAULT now(),
      modified_at    timestamptz NOT NULL DEFAULT now(),
      version        bigint      NOT NULL DEFAULT 1,
      deleted_at     timestamptz
    )
  `);
  // userName is unique case-insensitively among the users that still exist; a deleted user's
  // userName can be provisioned again.
  await knex.raw(`CREATE UNIQUE INDEX users_user_name_key ON users (lower(user_name)) WHERE deleted_at IS NULL`);
  await knex.raw(`CREATE INDEX users_external_id_idx ON users (external_id) WHERE external_id IS NOT NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE users');
}
