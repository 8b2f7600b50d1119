import { DECLARED_ORGANIZATION_DEFAULT } from '../database/tenancy';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/** The events that leave the platform through webhooks (CONTRACT §2a). */
export const WEBHOOK_EVENT_TYPES = [
  'drive.reported',
  'drive.report_updated',
  'drive.report_withdrawn',
  'drive.deleted',
  'user.deactivated',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** One event, as the owner of the fact records it. */
export interface OutboxEvent {
  type: WebhookEventType;
  /** The team whose subscribers hear it (drive events); null when the relay must ask (user.deactivated). */
  groupId: string | null;
  /** The user the event concerns (the driver, or the deactivated user). */
  userId: string | null;
  /** The `data` object of the delivered payload. */
  data: Record<string, unknown>;
}

/**
 * The outbox table of a service's own schema: events are written in the transaction that changes the fact, and a
 * relay hands them on afterwards, so an event exists exactly when its change committed. The id is the event's
 * `webhook-id` for ever, so a relay that sends a row twice sends the same event.
 */
export async function createOutboxTable(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE outbox (
      id          uuid           PRIMARY KEY,
      event_type  text           NOT NULL CHECK (event_type IN (${WEBHOOK_EVENT_TYPES.map((t) => `'${t}'`).join(', ')})),
      group_id    bigint         CHECK (group_id > 0),
      user_id     char(10)       CHECK (user_id ~ '^[A-Za-z0-9]{10}$'),
      occurred_at timestamptz(3) NOT NULL DEFAULT now(),
      payload     jsonb          NOT NULL CHECK (jsonb_typeof(payload) = 'object')
    )
  `);
  await knex.raw(`CREATE INDEX outbox_order_idx ON outbox (occurred_at, id)`);
}

/**
 * The outbox's organization column (migrations of the outbox's owners): added with the single organization of an
 * installation from before organizations (1) as its default, so that replicas of that release, which declare none,
 * keep writing events while the new release rolls out (expand).
 */
export function outboxOrganizationExpandStatements(): string[] {
  return [
    `ALTER TABLE outbox ADD COLUMN IF NOT EXISTS organization_id bigint NOT NULL DEFAULT 1 CHECK (organization_id > 0)`,
  ];
}

/**
 * After the rollout (contract): an event takes the organization its transaction declared (inOrganization), and one
 * written in a transaction that declared none fails instead of landing in organization 1.
 */
export function outboxOrganizationContractStatements(): string[] {
  return [`ALTER TABLE outbox ALTER COLUMN organization_id SET DEFAULT ${DECLARED_ORGANIZATION_DEFAULT}`];
}

/** Records `event` in the caller's transaction; returns its id (the future `webhook-id`). */
export async function recordEvent(trx: Knex.Transaction, event: OutboxEvent): Promise<string> {
  const id = randomUUID();
  await trx('outbox').insert({
    id,
    event_type: event.type,
    group_id: event.groupId,
    user_id: event.userId,
    payload: JSON.stringify(event.data),
  });
  return id;
}
