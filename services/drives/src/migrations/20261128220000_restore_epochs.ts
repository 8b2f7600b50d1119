import type { Knex } from 'knex';

// The restore epochs this database has been in (docs/architecture.md, "Restore epochs"): one row per epoch, in the
// order the service first saw them. A point-in-time restore brings this table back as it was at the restore point, so
// an epoch the restored history never saw is not in it. Not an organization's data: no row-level security.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE restore_epochs (
      seq           bigint         GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      epoch         text           NOT NULL UNIQUE,
      first_seen_at timestamptz(3) NOT NULL DEFAULT now(),
      restore_point timestamptz(3)
    )
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE restore_epochs');
}
