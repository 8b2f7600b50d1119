// The Webhooks service's data access (schema `webhooks`): subscriptions, events, deliveries and the delivery queue.
// Every row belongs to an organization. What a client asks for runs inside its organization (OrganizationWebhooks,
// under row-level security and with explicit organization filters); only the delivery worker's queue work runs
// across organizations.
import type { webhooksV1 } from '@mileage/proto';
import { acrossOrganizations, inOrganization, type Knex } from '@mileage/runtime/database';
import { dateToTimestamp } from '@mileage/runtime/formats';
import { randomUUID } from 'node:crypto';

export interface SubscriptionRow {
  id: string;
  group_id: string;
  url: string;
  events: string[];
  secret: string;
  state: 'active' | 'disabled';
  failure_run: number;
  failing_since: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
  created_at: Date;
}

interface DeliveryRow {
  id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  last_latency_ms: number | null;
  created_at: Date;
  delivered_at: Date | null;
}

/** A delivery a worker has claimed: everything it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  attempts: number;
  /** Since when this delivery is being retried. */
  retry_since: Date;
  subscription_id: string;
  group_id: string;
  url: string;
  secret: string;
  event_id: string;
  event_type: string;
  occurred_at: Date;
  data: Record<string, unknown>;
}

/** The outcome of an attempt, as recorded. */
export interface AttemptRecord {
  success: boolean;
  statusCode: number;
  latencyMs: number;
  error: string;
  /** When to try again; absent: give up (failed). Ignored on success. */
  retryAt?: Date;
}

/** One event to fan out, with the groups whose subscribers hear it. */
export interface IncomingEvent {
  id: string;
  /** Only this organization's subscriptions hear it. */
  organizationId: number;
  type: string;
  groupId: number | null;
  userId: string | null;
  occurredAt: string;
  data: Record<string, unknown>;
  /** The groups to fan out to (the event's own, or the user's groups for user.deactivated). */
  targetGroups: number[];
}

export const MAX_SUBSCRIPTIONS_PER_GROUP = 10;
/**
 * Claims and attempt outcomes are committed without waiting for the WAL flush: a crash of PostgreSQL can forget the
 * last of them, which only means an attempt is made again (same webhook-id) — at least once still holds. Events and
 * deliveries themselves (PublishEvents) and subscriptions are committed durably.
 */
const RELAXED_COMMIT = 'SET LOCAL synchronous_commit TO off';

export function toSubscription(row: SubscriptionRow): webhooksV1.Subscription {
  return {
    id: row.id,
    groupId: Number(row.group_id),
    url: row.url,
    events: row.events,
    state: row.state,
    disabledReason: row.disabled_reason ?? '',
    failureRun: row.failure_run,
    createTime: dateToTimestamp(row.created_at),
    ...(row.disabled_at ? { disableTime: dateToTimestamp(row.disabled_at) } : {}),
  };
}

function toDelivery(row: DeliveryRow): webhooksV1.Delivery {
  const optional = (key: keyof webhooksV1.Delivery, d: Date | null) => (d ? { [key]: dateToTimestamp(d) } : {});
  return {
    id: String(row.id),
    subscriptionId: row.subscription_id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    createTime: dateToTimestamp(row.created_at),
    ...optional('nextAttemptTime', row.status === 'pending' ? row.next_attempt_at : null),
    ...optional('lastAttemptTime', row.last_attempt_at),
    lastStatusCode: row.last_status_code ?? 0,
    lastError: row.last_error ?? '',
    lastLatencyMs: row.last_latency_ms ?? 0,
    ...optional('deliveredTime', row.delivered_at),
  };
}

const DELIVERY_COLUMNS = [
  'd.id',
  'd.subscription_id',
  'd.event_id',
  'e.event_type',
  'd.status',
  'd.attempts',
  'd.next_attempt_at',
  'd.last_attempt_at',
  'd.last_status_code',
  'd.last_error',
  'd.last_latency_ms',
  'd.created_at',
  'd.delivered_at',
];

/** What one organization's calls read and write: built over a transaction that declared the organization. */
export class OrganizationWebhooks {
  constructor(
    private readonly trx: Knex.Transaction,
    private readonly organizationId: number,
  ) {}

  private subscriptions() {
    return this.trx('subscriptions').where({ organization_id: this.organizationId });
  }

  /** Inserts a subscription; 'duplicate' when the group has the URL already, 'full' at the group's maximum. */
  async createSubscription(
    groupId: number,
    url: string,
    events: string[],
    sealedSecret: string,
  ): Promise<SubscriptionRow | 'duplicate' | 'full'> {
    // One creation per group at a time (until the transaction ends), so the maximum holds under concurrent requests.
    await this.trx.raw('SELECT pg_advisory_xact_lock(hashtext(?), ?::int)', [
      'webhooks.subscriptions',
      groupId % 2 ** 31,
    ]);
    const counted = await this.subscriptions().where({ group_id: groupId }).count<{ count: string }[]>('*');
    if (Number(counted[0]?.count ?? 0) >= MAX_SUBSCRIPTIONS_PER_GROUP) return 'full';
    const rows = await this.trx('subscriptions')
      .insert({
        id: randomUUID(),
        organization_id: this.organizationId,
        group_id: groupId,
        url,
        events,
        secret: sealedSecret,
      })
      // The URL's unique key: per organization and group (and, until the contract phase, per group).
      .onConflict()
      .ignore()
      .returning<SubscriptionRow[]>('*');
    return rows[0] ?? 'duplicate';
  }

  async listSubscriptions(groupId: number): Promise<SubscriptionRow[]> {
    return this.subscriptions()
      .where({ group_id: groupId })
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  }

  async getSubscription(groupId: number, id: string): Promise<SubscriptionRow | undefined> {
    return this.subscriptions().where({ group_id: groupId, id }).first();
  }

  async deleteSubscription(groupId: number, id: string): Promise<boolean> {
    return (await this.subscriptions().where({ group_id: groupId, id }).delete()) > 0;
  }

  private deliveries() {
    return this.trx('deliveries as d')
      .join('events as e', (j) => j.on('e.id', 'd.event_id').andOn('e.organization_id', 'd.organization_id'))
      .where('d.organization_id', this.organizationId);
  }

  async listDeliveries(
    subscriptionId: string,
    limit: number,
  ): Promise<{ deliveries: webhooksV1.Delivery[]; hasMore: boolean }> {
    const rows = await this.deliveries()
      .where('d.subscription_id', subscriptionId)
      .orderBy('d.id', 'desc')
      .limit(limit + 1)
      .select<DeliveryRow[]>(DELIVERY_COLUMNS);
    return { deliveries: rows.slice(0, limit).map(toDelivery), hasMore: rows.length > limit };
  }

  /** Makes a delivery due now (attempts kept) and re-enables its subscription; undefined when there is no such one. */
  async redeliver(subscriptionId: string, deliveryId: string): Promise<webhooksV1.Delivery | undefined> {
    const updated = await this.trx('deliveries')
      .where({ id: deliveryId, subscription_id: subscriptionId, organization_id: this.organizationId })
      .update({
        status: 'pending',
        next_attempt_at: this.trx.fn.now(),
        finished_at: null,
        retry_since: this.trx.fn.now(),
      })
      .returning('id');
    if (!updated.length) return undefined;
    await this.subscriptions()
      .where({ id: subscriptionId, state: 'disabled' })
      .update({ state: 'active', failure_run: 0, failing_since: null, disabled_at: null, disabled_reason: null });
    return toDelivery(await this.deliveries().where('d.id', deliveryId).first<DeliveryRow>(DELIVERY_COLUMNS));
  }

  /** The groups with an active subscription to the event type (to know whether a lookup is worth making). */
  async groupsSubscribedTo(eventType: string): Promise<Set<number>> {
    const rows = await this.subscriptions()
      .distinct('group_id')
      .where({ state: 'active' })
      .whereRaw('? = ANY(events)', [eventType]);
    return new Set(rows.map((r: { group_id: string }) => Number(r.group_id)));
  }

  /**
   * Stores the events not seen before (all of this organization) and a delivery for every active subscription of
   * their groups in this organization that wants their type. Events seen before are skipped entirely (idempotent by
   * id).
   */
  async publish(events: IncomingEvent[]): Promise<{ accepted: number; deliveries: number }> {
    if (!events.length) return { accepted: 0, deliveries: 0 };
    if (events.some((e) => e.organizationId !== this.organizationId))
      throw new Error('an event of another organization');
    const inserted: { id: string }[] = await this.trx('events')
      .insert(
        events.map((e) => ({
          id: e.id,
          organization_id: this.organizationId,
          event_type: e.type,
          group_id: e.groupId,
          user_id: e.userId,
          occurred_at: e.occurredAt,
          data: JSON.stringify(e.data),
        })),
      )
      .onConflict('id')
      .ignore()
      .returning('id');
    const fresh = new Set(inserted.map((r) => r.id));
    const pairs = events
      .filter((e) => fresh.has(e.id))
      .flatMap((e) => e.targetGroups.map((g) => ({ id: e.id, type: e.type, group: g })));
    if (!pairs.length) return { accepted: fresh.size, deliveries: 0 };
    const result = await this.trx.raw(
      `INSERT INTO deliveries (subscription_id, event_id, organization_id, next_attempt_at)
       SELECT s.id, t.event_id, s.organization_id, now()
         FROM unnest(?::uuid[], ?::text[], ?::bigint[]) AS t (event_id, event_type, group_id)
         JOIN subscriptions s ON s.organization_id = ? AND s.group_id = t.group_id
                             AND t.event_type = ANY (s.events) AND s.state = 'active'
       ON CONFLICT DO NOTHING`,
      [pairs.map((p) => p.id), pairs.map((p) => p.type), pairs.map((p) => p.group), this.organizationId],
    );
    return { accepted: fresh.size, deliveries: (result as { rowCount: number }).rowCount };
  }
}

/**
 * The service's database: one organization's work (`inOrganization`) and the delivery queue, which is system work
 * across organizations (the workers claim whatever is due, whoever it belongs to, in the fair order below).
 */
export class WebhooksRepository {
  constructor(readonly knex: Knex) {}

  /** Runs `work` in one transaction that sees and writes only the rows of `organizationId`. */
  inOrganization<T>(organizationId: number, work: (webhooks: OrganizationWebhooks) => Promise<T>): Promise<T> {
    return inOrganization(this.knex, organizationId, (trx) => work(new OrganizationWebhooks(trx, organizationId)));
  }

  /** Pauses or resumes every delivery of an organization (its offboarding's suspension). */
  async setPaused(organizationId: number, paused: boolean): Promise<void> {
    if (paused)
      await this.knex.raw('INSERT INTO paused_organizations (organization_id) VALUES (?) ON CONFLICT DO NOTHING', [
        organizationId,
      ]);
    else await this.knex('paused_organizations').where({ organization_id: organizationId }).delete();
  }

  /**
   * Claims up to `limit` due deliveries of active subscriptions (row locks with SKIP LOCKED, so replicas never take
   * the same one) and leases them: the attempt is counted and the delivery is due again only when the lease ends,
   * so one whose worker dies is retried by another. A subscription has at most `perSubscription` attempts in flight
   * (over every replica: claims take turns), and the claim order is round-robin across each group's subscriptions and
   * across groups, so one group's dead endpoints cannot hold every slot nor push another group's deliveries back.
   */
  async claim(limit: number, leaseMs: number, perSubscription: number): Promise<ClaimedDelivery[]> {
    return acrossOrganizations(this.knex, async (trx) => {
      await trx.raw(RELAXED_COMMIT);
      await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', ['webhooks.claim']);
      return this.claimIn(trx, limit, leaseMs, perSubscription);
    });
  }

  private async claimIn(
    trx: Knex.Transaction,
    limit: number,
    leaseMs: number,
    perSubscription: number,
  ): Promise<ClaimedDelivery[]> {
    const { rows } = await trx.raw<{ rows: ClaimedDelivery[] }>(
      `WITH in_flight AS (
         SELECT subscription_id, count(*)::int AS n FROM deliveries
          WHERE leased_until > now()
          GROUP BY subscription_id
       ), due AS (
         -- slot: the subscription's attempts in flight if this one were claimed too.
         SELECT d.id, d.next_attempt_at, s.group_id,
                coalesce(f.n, 0) + row_number() OVER (PARTITION BY d.subscription_id ORDER BY d.next_attempt_at, d.id) AS slot
           FROM deliveries d
           JOIN subscriptions s ON s.id = d.subscription_id AND s.state = 'active'
           LEFT JOIN in_flight f ON f.subscription_id = d.subscription_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= now()
            AND NOT EXISTS (SELECT 1 FROM paused_organizations p WHERE p.organization_id = d.organization_id)
       ), turns AS (
         SELECT id, next_attempt_at,
                row_number() OVER (PARTITION BY group_id ORDER BY slot, next_attempt_at, id) AS turn
           FROM due
          WHERE slot <= ?
       ), picked AS (
         SELECT d.id FROM deliveries d
           JOIN turns t ON t.id = d.id
          ORDER BY t.turn, t.next_attempt_at, d.id
          LIMIT ?
            FOR UPDATE OF d SKIP LOCKED
       ), claimed AS (
         UPDATE deliveries d
            SET attempts = d.attempts + 1,
                last_attempt_at = now(),
                next_attempt_at = now() + make_interval(secs => ?::double precision / 1000),
                leased_until = now() + make_interval(secs => ?::double precision / 1000)
           FROM picked
          WHERE d.id = picked.id AND d.status = 'pending' AND d.next_attempt_at <= now()
         RETURNING d.id, d.attempts, d.retry_since, d.subscription_id, d.event_id
       )
       SELECT c.id, c.attempts, c.retry_since, c.subscription_id, s.group_id, s.url, s.secret,
              c.event_id, e.event_type, e.occurred_at, e.data
         FROM claimed c
         JOIN subscriptions s ON s.id = c.subscription_id
         JOIN events e ON e.id = c.event_id`,
      [perSubscription, limit, leaseMs, leaseMs],
    );
    return rows;
  }

  /**
   * Records an attempt (only if the delivery is still this attempt's: a worker whose lease ran out changes nothing)
   * and the subscription's run of failures; disables it when the run has lasted long enough.
   */
  async record(
    delivery: Pick<ClaimedDelivery, 'id' | 'attempts' | 'subscription_id'>,
    attempt: AttemptRecord,
    disable: { afterFailures: number; afterMs: number },
  ): Promise<{ recorded: boolean; disabled: boolean }> {
    const outcome = attempt.success ? 'succeeded' : attempt.retryAt ? 'pending' : 'failed';
    const reason = `${disable.afterFailures} or more failed attempts in a row over at least ${Math.round(disable.afterMs / 3_600_000)} h`;
    return acrossOrganizations(this.knex, async (trx) => {
      await trx.raw(RELAXED_COMMIT);
      // One statement: the delivery (only if it is still this attempt's) and its subscription's run of failures.
      const { rows } = await trx.raw<{ rows: { recorded: number; disabled: boolean }[] }>(
        `WITH d AS (
           UPDATE deliveries
              SET status = ?, last_status_code = ?, last_latency_ms = ?, last_error = ?, leased_until = NULL,
                  next_attempt_at = ?::timestamptz,
                  delivered_at = CASE WHEN ? = 'succeeded' THEN now() END,
                  finished_at = CASE WHEN ? <> 'pending' THEN now() END
            WHERE id = ? AND attempts = ? AND status = 'pending'
           RETURNING subscription_id
         ), s AS (
           UPDATE subscriptions sub
              SET failure_run = CASE WHEN ? THEN 0 ELSE sub.failure_run + 1 END,
                  failing_since = CASE WHEN ? THEN NULL ELSE coalesce(sub.failing_since, now()) END,
                  state = CASE WHEN NOT ? AND sub.state = 'active' AND sub.failure_run + 1 >= ?
                                AND coalesce(sub.failing_since, now()) <= now() - make_interval(secs => ?::double precision / 1000)
                               THEN 'disabled' ELSE sub.state END,
                  disabled_at = CASE WHEN NOT ? AND sub.state = 'active' AND sub.failure_run + 1 >= ?
                                AND coalesce(sub.failing_since, now()) <= now() - make_interval(secs => ?::double precision / 1000)
                               THEN now() ELSE sub.disabled_at END,
                  disabled_reason = CASE WHEN NOT ? AND sub.state = 'active' AND sub.failure_run + 1 >= ?
                                AND coalesce(sub.failing_since, now()) <= now() - make_interval(secs => ?::double precision / 1000)
                               THEN ? ELSE sub.disabled_reason END
             FROM d
            WHERE sub.id = d.subscription_id
              AND (NOT ? OR sub.failure_run > 0 OR sub.failing_since IS NOT NULL)
           RETURNING sub.state = 'disabled' AND sub.disabled_at = now() AS disabled
         )
         SELECT (SELECT count(*) FROM d)::int AS recorded, coalesce((SELECT bool_or(disabled) FROM s), false) AS disabled`,
        [
          outcome,
          attempt.statusCode || null,
          attempt.latencyMs,
          attempt.error || null,
          outcome === 'pending' ? attempt.retryAt!.toISOString() : null,
          outcome,
          outcome,
          delivery.id,
          delivery.attempts,
          attempt.success,
          attempt.success,
          attempt.success,
          disable.afterFailures,
          disable.afterMs,
          attempt.success,
          disable.afterFailures,
          disable.afterMs,
          attempt.success,
          disable.afterFailures,
          disable.afterMs,
          reason,
          attempt.success,
        ],
      );
      return { recorded: rows[0]!.recorded > 0, disabled: rows[0]!.disabled };
    });
  }

  /** Pending deliveries, how many are due, and the age of the oldest due one (seconds), over every organization. */
  async queueStats(): Promise<{ pending: number; due: number; oldestDueSeconds: number }> {
    const row = await acrossOrganizations(this.knex, (trx) =>
      trx('deliveries as d')
        .join('subscriptions as s', 's.id', 'd.subscription_id')
        .where({ 'd.status': 'pending', 's.state': 'active' })
        .first(
          trx.raw('count(*)::int AS pending'),
          trx.raw('(count(*) FILTER (WHERE d.next_attempt_at <= now()))::int AS due'),
          trx.raw(
            'coalesce(extract(epoch FROM now() - min(d.next_attempt_at) FILTER (WHERE d.next_attempt_at <= now())), 0)::float AS oldest',
          ),
        ),
    );
    return { pending: row?.pending ?? 0, due: row?.due ?? 0, oldestDueSeconds: row?.oldest ?? 0 };
  }

  /** Deletes finished deliveries, and events without deliveries, older than the retention window (every organization). */
  async purge(retentionMs: number): Promise<{ deliveries: number; events: number }> {
    const cutoff = new Date(Date.now() - retentionMs);
    return acrossOrganizations(this.knex, async (trx) => {
      const deliveries = await trx('deliveries')
        .whereNot('status', 'pending')
        .where('finished_at', '<', cutoff)
        .delete();
      const events = await trx('events')
        .where('received_at', '<', cutoff)
        .whereNotExists(trx('deliveries').whereRaw('deliveries.event_id = events.id'))
        .delete();
      return { deliveries, events };
    });
  }
}
