import {
  ALL_ORGANIZATIONS_SETTING,
  DECLARED_ORGANIZATION_DEFAULT,
  foreignKeyStatements,
} from '@mileage/runtime/database';
import type { Knex } from 'knex';

// Review comments know their organization (expand: runs before the rollout, while the previous release still serves).
// Until now a comment's organization was only its report's, through the foreign key: a statement on comments by drive
// ids from anywhere else would have read another organization's. Existing comments take their report's; one written
// during the rollout takes the organization its transaction declared (1 if none, as the organizations' own expand
// did). A comment is of its report's organization: the database refuses another. The contract phase isolates them.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE review_comments ADD COLUMN organization_id bigint`);
  await knex.raw(
    `ALTER TABLE review_comments ALTER COLUMN organization_id SET DEFAULT coalesce(${DECLARED_ORGANIZATION_DEFAULT}, 1)`,
  );
  // The reports are isolated already: the backfill reads every organization's (for this transaction only).
  await knex.raw(`SELECT set_config(?, 'on', true)`, [ALL_ORGANIZATIONS_SETTING]);
  await knex.raw(`UPDATE review_comments c SET organization_id = r.organization_id
    FROM drive_reports r WHERE r.drive_id = c.drive_id`);
  await knex.raw(`SELECT set_config(?, '', true)`, [ALL_ORGANIZATIONS_SETTING]);
  await knex.raw(`ALTER TABLE review_comments ALTER COLUMN organization_id SET NOT NULL`);
  await knex.raw(
    `ALTER TABLE drive_reports ADD CONSTRAINT drive_reports_drive_organization_key UNIQUE (drive_id, organization_id)`,
  );
  for (const statement of foreignKeyStatements(
    'review_comments',
    'review_comments_report_organization_fkey',
    'FOREIGN KEY (drive_id, organization_id) REFERENCES drive_reports (drive_id, organization_id)',
  ))
    await knex.raw(statement);
  // The composite key holds the report too: the key on the drive alone would be one check more for every comment.
  await knex.raw(`ALTER TABLE review_comments DROP CONSTRAINT review_comments_drive_id_fkey`);
  // Comments are read by organization and drive: a page of reports' comments (by ids, or an export's range of drive
  // ids) touches only the organization's, however other organizations' drives interleave with its own.
  await knex.raw(
    `CREATE INDEX review_comments_organization_drive_idx ON review_comments (organization_id, drive_id, id)`,
  );
  await knex.raw(`DROP INDEX review_comments_drive_idx`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX review_comments_drive_idx ON review_comments (drive_id, id)`);
  await knex.raw(`DROP INDEX review_comments_organization_drive_idx`);
  await knex.raw(`ALTER TABLE review_comments ADD CONSTRAINT review_comments_drive_id_fkey
    FOREIGN KEY (drive_id) REFERENCES drive_reports (drive_id)`);
  await knex.raw(`ALTER TABLE review_comments DROP CONSTRAINT review_comments_report_organization_fkey`);
  await knex.raw(`ALTER TABLE drive_reports DROP CONSTRAINT drive_reports_drive_organization_key`);
  await knex.raw(`ALTER TABLE review_comments DROP COLUMN organization_id`);
}
