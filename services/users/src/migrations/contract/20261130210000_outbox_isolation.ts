import { dropOrganizationIsolationStatements, organizationIsolationStatements } from '@mileage/runtime/database';
import type { Knex } from 'knex';

// The outbox under row-level security, as the facts its events tell of (contract: runs once no replica of the previous
// release serves, whose relay read the outbox without declaring). A transaction writes and sees only its organization's
// events; the relay reads every organization's as a named exception (acrossOrganizations, outbox-relay.ts).
export async function up(knex: Knex): Promise<void> {
  for (const statement of organizationIsolationStatements('outbox')) await knex.raw(statement);
}

export async function down(knex: Knex): Promise<void> {
  for (const statement of dropOrganizationIsolationStatements('outbox')) await knex.raw(statement);
}
