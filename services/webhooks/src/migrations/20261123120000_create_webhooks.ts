import type { Knex } from 'knex';

const EVENT_TYPES = `'drive.reported', 'drive.report_updated', 'drive.report_withdrawn', 'drive.deleted', 'user.deactivated'`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE subscriptions (
      id            uuid        PRIMARY KEY,
      group_id      bigint      NOT NULL CHECK (group_id > 0),
      url           text        NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
      events        text[]      NOT NULL CHECK (cardinality(events) > 0 AND events <@ ARRAY[${EVENT_TYPES}]),
      -- The signing secret, sealed (AES-256-GCM under WEBHOOKS_SECRET_KEY) or 'plain:' in development mode.
      secret        text        NOT NULL,
      state         text        NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled')),
      -- Failed attempts in a row, and since when (reset by a success).
      failure_run   integer     NOT NULL DEFAULT 0,
      failing_since timestamptz,
      disabled_at   timestamptz,
      disabled_reason text,
      created_at    timestamptz NOT NULL DEFAULT now(),
      UNIQUE (group_id, url)
    )
  `);
  await knex.raw(`
    CREATE TABLE events (
      id          uuid           PRIMARY KEY,
      event_type  text           NOT NULL CHECK (event_type IN (${EVENT_TYPES})),
      group_id    bigint         CHECK (group_id > 0),
      user_id     text,
      occurred_at timestamptz(3) NOT NULL,
      data        jsonb          NOT NULL,
      received_at timestamptz    NOT NULL DEFAULT now()
    )
  `);
  await knex.raw(`CREATE INDEX events_received_idx ON events (received_at)`);
  await knex.raw(`
    CREATE TABLE deliveries (
      id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      subscription_id   uuid        NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
      event_id          uuid        NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      status            text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
      attempts          integer     NOT NULL DEFAULT 0,
      -- When a pending delivery is due; while an attempt runs, when its lease ends (then another worker may retry).
      next_attempt_at   timestamptz,
      last_attempt_at   timestamptz,
      last_status_code  integer,
      last_error        text,
      last_latency_ms   integer,
      created_at        timestamptz NOT NULL DEFAULT now(),
      -- Retries run until this is WEBHOOKS_RETRY_WINDOW_MS old (reset by a redelivery).
      retry_since       timestamptz NOT NULL DEFAULT now(),
      delivered_at      timestamptz,
      finished_at       timestamptz,
      UNIQUE (subscription_id, event_id)
    )
  `);
  // The workers' queue: only pending deliveries, by due time.
  await knex.raw(`CREATE INDEX deliveries_due_idx ON deliveries (next_attempt_at) WHERE status = 'pending'`);
  // A subscription's delivery log, newest first.
  await knex.raw(`CREATE INDEX deliveries_log_idx ON deliveries (subscription_id, id DESC)`);
  await knex.raw(`CREATE INDEX deliveries_event_idx ON deliveries (event_id)`);
  await knex.raw(`CREATE INDEX deliveries_finished_idx ON deliveries (finished_at) WHERE status <> 'pending'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE deliveries');
  await knex.raw('DROP TABLE events');
  await knex.raw('DROP TABLE subscriptions');
}
