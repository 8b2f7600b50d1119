import type { Knex } from 'knex';

// Deleted drives and withdrawn reports leave the live tables in the transaction that deletes them and leave a
// tombstone here, for the change feed (`include_deleted=true`), until the retention window has passed and the
// service's housekeeping purges it (docs/architecture.md, "Change feed").
export async function up(knex: Knex): Promise<void> {
  // One per deleted drive: its driver, the group it was reported to when deleted, and the drive as it was (kept
  // for operators until the purge; never served).
  await knex.raw(`
    CREATE TABLE drive_tombstones (
      drive_id    bigint         PRIMARY KEY CHECK (drive_id > 0),
      user_id     char(10)       NOT NULL CHECK (user_id ~ '^[A-Za-z0-9]{10}$'),
      group_ids   bigint[]       NOT NULL DEFAULT '{}',
      modified_at timestamptz(3) NOT NULL DEFAULT now(),
      drive       jsonb          NOT NULL
    )
  `);
  await tombstoneIndexes(knex, 'drive_tombstones', 'user');

  // One per (drive, group) whose report was withdrawn, by the driver or by deleting the drive. Reporting the drive to
  // the same group again removes it (the live report supersedes it).
  await knex.raw(`
    CREATE TABLE report_tombstones (
      drive_id    bigint         NOT NULL CHECK (drive_id > 0),
      group_id    bigint         NOT NULL CHECK (group_id > 0),
      user_id     char(10)       NOT NULL CHECK (user_id ~ '^[A-Za-z0-9]{10}$'),
      modified_at timestamptz(3) NOT NULL DEFAULT now(),
      PRIMARY KEY (drive_id, group_id)
    )
  `);
  await tombstoneIndexes(knex, 'report_tombstones', 'group');

  // The cutoff of the latest purge: tombstones are complete from max(now - retention, purged_before), which covers a
  // retention that was just lengthened (the tombstones the shorter one purged are gone).
  await knex.raw(`
    CREATE TABLE tombstone_purges (
      singleton     boolean        PRIMARY KEY DEFAULT true CHECK (singleton),
      purged_before timestamptz(3) NOT NULL
    )
  `);
  await knex.raw(`INSERT INTO tombstone_purges (purged_before) VALUES ('-infinity')`);
}

/** The change feed reads a tombstone table newest first per user or group; the housekeeping purges it by age. */
async function tombstoneIndexes(knex: Knex, table: string, per: 'user' | 'group'): Promise<void> {
  await knex.raw(`CREATE INDEX ${table}_${per}_modified_idx ON ${table} (${per}_id, modified_at DESC, drive_id DESC)`);
  await knex.raw(`CREATE INDEX ${table}_modified_idx ON ${table} (modified_at)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE tombstone_purges');
  await knex.raw('DROP TABLE report_tombstones');
  await knex.raw('DROP TABLE drive_tombstones');
}
