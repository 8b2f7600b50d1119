import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // SCIM clients look groups up by name (`displayName eq "…"`, case-insensitive) before changing them.
  await knex.raw(`CREATE INDEX teams_display_name_idx ON teams (lower(display_name))`);
  // The record of writes made with a write_id (see the Users service's table of the same name).
  await knex.raw(`
    CREATE TABLE write_requests (
      write_id    uuid        PRIMARY KEY,
      outcome     text        NOT NULL CHECK (outcome IN ('applied', 'abandoned')),
      team_id     bigint,
      recorded_at timestamptz NOT NULL DEFAULT now()
    )
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE write_requests');
  await knex.raw('DROP INDEX teams_display_name_idx');
}
