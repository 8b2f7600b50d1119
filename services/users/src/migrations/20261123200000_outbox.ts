import { createOutboxTable } from '@mileage/runtime/outbox';
import type { Knex } from 'knex';

// Events for webhooks leave this service through an outbox written in the same transaction as the change.
export async function up(knex: Knex): Promise<void> {
  await createOutboxTable(knex);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE outbox');
}
