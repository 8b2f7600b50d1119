import {
  DECLARED_ORGANIZATION_DEFAULT,
  dropOrganizationIsolationStatements,
  organizationIsolationStatements,
} from '@mileage/runtime/database';
import type { Knex } from 'knex';

// Review comments isolated by organization (contract: runs once no replica of the previous release serves), as the
// drives and reports are: a comment takes the organization its transaction declared, and a transaction sees only its
// organization's comments.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `ALTER TABLE review_comments ALTER COLUMN organization_id SET DEFAULT ${DECLARED_ORGANIZATION_DEFAULT}`,
  );
  for (const statement of organizationIsolationStatements('review_comments')) await knex.raw(statement);
}

export async function down(knex: Knex): Promise<void> {
  for (const statement of dropOrganizationIsolationStatements('review_comments')) await knex.raw(statement);
  await knex.raw(
    `ALTER TABLE review_comments ALTER COLUMN organization_id SET DEFAULT coalesce(${DECLARED_ORGANIZATION_DEFAULT}, 1)`,
  );
}
