// The relay from a service's outbox to the Webhooks service: at least once, in commit order per batch, with several
// replicas taking disjoint batches (row locks with SKIP LOCKED).
import { webhooksV1 } from '@mileage/proto';
import type { Counter } from 'prom-client';
import { z } from 'zod';
import { env } from '../config/config';
import type { Knex } from '../database/db';
import { acrossOrganizations, ONE_STATEMENT, readAcrossOrganizations } from '../database/tenancy';
import type { PromiseClient } from '../grpc/grpc-client';
import type { Logger } from '../telemetry/logger';
import { sharedWhileReading, type Metrics } from '../telemetry/metrics';
import type { BackgroundTask, ClientSpec } from '../service/service';
import { dateToTimestamp } from '../formats/wire-time';

/** A row of the `outbox` table (see outbox.ts). */
export interface OutboxRow {
  id: string;
  event_type: string;
  group_id: string | null;
  user_id: string | null;
  organization_id: string;
  occurred_at: Date;
  payload: Record<string, unknown>;
}

export interface OutboxRelayOptions {
  knex: Knex;
  /** Hands a batch on; resolves only when the receiver has stored it (then the rows are deleted). */
  publish(rows: OutboxRow[]): Promise<void>;
  batchSize?: number;
  logger?: Logger;
  metrics?: Metrics;
}

/**
 * Takes the oldest rows of the outbox (by occurred_at, id) under row locks that other relays skip, publishes them
 * and deletes them in the same transaction: every organization's events in one statement, as a named exception of
 * the outbox's row-level security (acrossOrganizations). A relay that dies before the commit leaves its rows in place
 * (their locks go with its connection) and they are published again: at least once, by event id, which the receiver
 * deduplicates.
 */
export class OutboxRelay {
  private readonly relayed?: Counter;

  constructor(private readonly o: OutboxRelayOptions) {
    const metrics = o.metrics;
    if (metrics) {
      this.relayed = metrics.counter({
        name: 'outbox_relayed_events_total',
        help: 'Outbox events handed on to the Webhooks service.',
      });
      const knex = o.knex;
      const outbox = sharedWhileReading(async () => {
        const { rows } = await readAcrossOrganizations(
          knex,
          (run) =>
            run<{ n: number; age: number }>(
              `SELECT count(*)::int AS n, coalesce(extract(epoch FROM now() - min(occurred_at)), 0)::float AS age
                 FROM outbox`,
            ),
          ONE_STATEMENT,
        );
        return { pending: rows[0]?.n ?? 0, ageSeconds: rows[0]?.age ?? 0 };
      });
      metrics.gauge({
        name: 'outbox_oldest_event_age_seconds',
        help: 'Age of the oldest event still in the outbox (0: empty).',
        async collect() {
          this.set((await outbox()).ageSeconds);
        },
      });
      metrics.gauge({
        name: 'outbox_pending_events',
        help: 'Events in the outbox waiting to be relayed.',
        async collect() {
          this.set((await outbox()).pending);
        },
      });
    }
  }

  /** Relays batches until the outbox is empty (or a batch fails); returns how many events went. */
  async run(): Promise<number> {
    const size = this.o.batchSize ?? 500;
    let total = 0;
    for (;;) {
      const n = await acrossOrganizations(this.o.knex, async (trx) => {
        const rows: OutboxRow[] = await trx('outbox')
          .orderBy([{ column: 'occurred_at' }, { column: 'id' }])
          .limit(size)
          .forUpdate()
          .skipLocked()
          .select('id', 'event_type', 'group_id', 'user_id', 'organization_id', 'occurred_at', 'payload');
        if (!rows.length) return 0;
        await this.o.publish(rows);
        await trx('outbox')
          .whereIn(
            'id',
            rows.map((r) => r.id),
          )
          .delete();
        return rows.length;
      });
      total += n;
      this.relayed?.inc(n);
      if (n < size) return total;
    }
  }
}

/** The variables of a service that relays its outbox (Drives, Users). */
export const outboxRelayConfigShape = {
  /** The Webhooks service (a gRPC target). Unset: no relay; events stay in the outbox until one is configured. */
  WEBHOOKS_ADDRESS: env.optionalTarget(),
  /** Deadline of one PublishEvents call. */
  WEBHOOKS_DEADLINE_MS: env.positiveInt(5_000),
  /** Pause between two looks at the outbox. */
  OUTBOX_RELAY_INTERVAL_MS: env.positiveInt(250),
  /** Events per PublishEvents call (at most 1000). */
  OUTBOX_RELAY_BATCH_SIZE: z.coerce.number().int().min(1).max(1000).default(500),
};

type RelayConfig = {
  WEBHOOKS_ADDRESS?: string | undefined;
  WEBHOOKS_DEADLINE_MS: number;
  OUTBOX_RELAY_INTERVAL_MS: number;
  OUTBOX_RELAY_BATCH_SIZE: number;
};

/** The Webhooks client a relaying service declares (none when WEBHOOKS_ADDRESS is unset). */
export function webhooksClientSpec(config: RelayConfig): Record<string, ClientSpec<webhooksV1.WebhooksServiceClient>> {
  return config.WEBHOOKS_ADDRESS
    ? {
        webhooks: {
          client: webhooksV1.WebhooksServiceClient,
          address: config.WEBHOOKS_ADDRESS,
          deadlineMs: config.WEBHOOKS_DEADLINE_MS,
        },
      }
    : {};
}

/** An outbox row as the Webhooks service's Event. */
export function toWebhookEvent(row: OutboxRow): webhooksV1.Event {
  return {
    id: row.id,
    type: row.event_type,
    groupId: row.group_id ? Number(row.group_id) : 0,
    userId: row.user_id ?? '',
    occurTime: dateToTimestamp(new Date(row.occurred_at)),
    dataJson: JSON.stringify(row.payload),
    organizationId: Number(row.organization_id),
  };
}

/** The relay as a background task of a service (none, with a log line, when no Webhooks service is configured). */
export function outboxRelayTasks(
  context: {
    knex: Knex;
    logger: Logger;
    metrics: Metrics;
    clients: Record<string, PromiseClient<webhooksV1.WebhooksServiceClient>>;
  },
  config: RelayConfig,
): BackgroundTask[] {
  const client = context.clients.webhooks;
  if (!client) {
    context.logger.info('WEBHOOKS_ADDRESS is not set: the outbox relay is off (events are kept in the outbox)');
    return [];
  }
  const relay = new OutboxRelay({
    knex: context.knex,
    batchSize: config.OUTBOX_RELAY_BATCH_SIZE,
    logger: context.logger,
    metrics: context.metrics,
    publish: async (rows) => {
      await client.publishEvents({ events: rows.map(toWebhookEvent) }, { deadlineMs: config.WEBHOOKS_DEADLINE_MS });
    },
  });
  // While the Webhooks service is away every run fails: say so once a minute, not four times a second.
  let failingSince: number | undefined;
  let lastLog = 0;
  const run = async () => {
    try {
      await relay.run();
      if (failingSince !== undefined)
        context.logger.info({ after_ms: Date.now() - failingSince }, 'outbox relay reaches the Webhooks service again');
      failingSince = undefined;
    } catch (err) {
      failingSince ??= Date.now();
      if (Date.now() - lastLog >= 60_000) {
        lastLog = Date.now();
        context.logger.warn(
          { err, failing_for_ms: Date.now() - failingSince },
          'outbox relay failed; the events stay in the outbox and go when it succeeds',
        );
      }
    }
  };
  return [{ name: 'outbox-relay', everyMs: config.OUTBOX_RELAY_INTERVAL_MS, run }];
}
