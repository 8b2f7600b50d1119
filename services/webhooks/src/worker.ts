// The delivery worker: claims due deliveries (SKIP LOCKED), signs and sends them, records the outcome and schedules
// retries with exponential backoff and jitter. Each replica runs one; together they never send a delivery twice at
// once, and a delivery whose worker dies is retried when its lease ends (at least once, same webhook-id).
import type { BackgroundTask } from '@mileage/runtime/service';
import { sharedWhileReading, type Logger, type Metrics } from '@mileage/runtime/telemetry';
import type { Counter, Histogram } from 'prom-client';
import type { ClaimedDelivery, WebhooksRepository } from './repo';
import type { SecretBox } from './secrets';
import { sign } from './secrets';
import { sendWebhook, type AttemptResult, type SendOptions } from './sender';

export interface WorkerOptions {
  repo: WebhooksRepository;
  secrets: SecretBox;
  logger: Logger;
  metrics: Metrics;
  send: SendOptions;
  concurrency: number;
  /** Attempts in flight for one subscription, over every replica. */
  perSubscription: number;
  retry: { baseMs: number; maxDelayMs: number; windowMs: number };
  disable: { afterFailures: number; afterMs: number };
  /** Added to the attempt timeout for the lease of a claimed delivery (default 5 s). */
  leaseMarginMs?: number;
  /** Replaces the HTTP sender (tests). */
  sender?: typeof sendWebhook;
}

/** The delay before retry number `attempt` (1 = the first retry): base·2^(attempt−1), capped, ±20 % jitter. */
export function retryDelayMs(attempt: number, baseMs: number, maxDelayMs: number, random = Math.random): number {
  const exponential = Math.min(maxDelayMs, baseMs * 2 ** Math.min(attempt - 1, 40));
  return Math.round(exponential * (0.8 + 0.4 * random()));
}

/** The body of a delivery (Standard Webhooks payload): type, timestamp (when it happened) and data. */
export function payload(d: Pick<ClaimedDelivery, 'event_type' | 'occurred_at' | 'data' | 'group_id'>): string {
  return JSON.stringify({
    type: d.event_type,
    timestamp: new Date(d.occurred_at).toISOString(),
    data: { ...d.data, group_id: (d.data.group_id as string | undefined) ?? String(d.group_id) },
  });
}

export class DeliveryWorker {
  private running: Promise<void> | undefined;
  private again = false;
  /**
   * A look at the queue asked for during a run (wake, or the poll): the run claims into its free slots at once. A flag
   * as well as the wait's end, since a wake during a claim may come after the claim's snapshot and its wait.
   */
  private nudged = false;
  /** Ends a wait for a free slot. */
  private nudge: (() => void) | undefined;
  private stopped = false;
  private readonly deliveries: Counter<'outcome'>;
  private readonly lag: Histogram;
  private readonly duration: Histogram<'outcome'>;

  constructor(private readonly o: WorkerOptions) {
    this.deliveries = o.metrics.counter({
      name: 'webhook_deliveries_total',
      help: 'Delivery attempts by outcome: success, http_error, network_error, timeout, refused (target not allowed), gave_up (retries exhausted).',
      labelNames: ['outcome'] as const,
    });
    this.lag = o.metrics.histogram({
      name: 'webhook_delivery_lag_seconds',
      help: 'From the event (its commit in the owner) to its successful delivery.',
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600, 86400],
    });
    this.duration = o.metrics.histogram({
      name: 'webhook_attempt_duration_seconds',
      help: 'Duration of one delivery attempt, by outcome.',
      labelNames: ['outcome'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    });
    const queueStats = sharedWhileReading(() => o.repo.queueStats());
    o.metrics.gauge({
      name: 'webhook_queue_oldest_due_seconds',
      help: 'How long the oldest due delivery has been waiting (0: none waiting).',
      async collect() {
        this.set((await queueStats()).oldestDueSeconds);
      },
    });
    o.metrics.gauge({
      name: 'webhook_queue_depth',
      help: 'Pending deliveries of active subscriptions (state="pending"), and those of them due now (state="due").',
      labelNames: ['state'] as const,
      async collect() {
        const stats = await queueStats();
        this.set({ state: 'pending' }, stats.pending);
        this.set({ state: 'due' }, stats.due);
      },
    });
  }

  /** Delivers every due delivery (one run at a time; a call during a run makes it look again when it ends). */
  drain(): Promise<void> {
    if (this.running) {
      this.again = true;
      this.nudged = true;
      this.nudge?.();
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.pool();
        } while (this.again && !this.stopped);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /**
   * Starts a run now, or makes the one going look at the queue again: PublishEvents and redelivery call it, and the
   * poll (deliveries that fall due, or that another replica stored).
   */
  wake(): void {
    this.drain().catch((err: unknown) => this.o.logger.warn({ err }, 'delivery run failed'));
  }

  /** Stops claiming; waits for the attempts in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running?.catch(() => undefined);
  }

  private async pool(): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    const leaseMs = this.o.send.timeoutMs + this.o.send.connectTimeoutMs + (this.o.leaseMarginMs ?? 5_000);
    for (;;) {
      if (this.stopped) break;
      const room = this.o.concurrency - inFlight.size;
      // Taken before the claim: a nudge during the claim (its delivery perhaps committed after the claim's snapshot)
      // is still set after it, and makes the run look again instead of waiting for an attempt to end.
      const nudged = this.nudged;
      this.nudged = false;
      // Claim in batches (a quarter of the slots at least) rather than one query per finished attempt, and into any
      // free slot when nudged: slow attempts in flight must not hold back new deliveries.
      const claimed =
        room > 0 && (nudged || inFlight.size === 0 || room >= Math.max(1, this.o.concurrency / 4))
          ? await this.o.repo.claim(room, leaseMs, this.o.perSubscription)
          : [];
      for (const d of claimed) {
        const p = this.attempt(d).finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
      if (!inFlight.size) break;
      // Claim more when enough slots are free, or at once when the last claim filled every free slot.
      const wait = claimed.length < room || room === 0 || inFlight.size > this.o.concurrency * 0.75;
      if (wait && !this.nudged) {
        const woken = new Promise<void>((resolve) => (this.nudge = resolve));
        await Promise.race([...inFlight, woken]);
        this.nudge = undefined;
      }
    }
    await Promise.all(inFlight);
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    const body = payload(d);
    const timestamp = Math.floor(Date.now() / 1000);
    let result: AttemptResult;
    try {
      const secret = this.o.secrets.open(d.secret);
      result = await (this.o.sender ?? sendWebhook)(
        d.url,
        {
          'webhook-id': d.event_id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': sign(secret, d.event_id, timestamp, body),
        },
        body,
        this.o.send,
      );
    } catch (err) {
      this.o.logger.error({ err, delivery_id: d.id }, 'delivery could not be prepared');
      result = {
        outcome: 'network_error',
        statusCode: 0,
        latencyMs: 0,
        error: 'internal error preparing the delivery',
      };
    }
    const success = result.outcome === 'success';
    const age = Date.now() - new Date(d.retry_since).getTime();
    const retryAt =
      success || age >= this.o.retry.windowMs
        ? undefined
        : new Date(Date.now() + retryDelayMs(d.attempts, this.o.retry.baseMs, this.o.retry.maxDelayMs));
    try {
      const { recorded, disabled } = await this.o.repo.record(
        d,
        {
          success,
          statusCode: result.statusCode,
          latencyMs: result.latencyMs,
          error: result.error,
          ...(retryAt ? { retryAt } : {}),
        },
        this.o.disable,
      );
      this.deliveries.inc({ outcome: result.outcome });
      this.duration.observe({ outcome: result.outcome }, result.latencyMs / 1000);
      if (success) this.lag.observe(Math.max(0, Date.now() - new Date(d.occurred_at).getTime()) / 1000);
      else if (!retryAt && recorded) this.deliveries.inc({ outcome: 'gave_up' });
      const fields = {
        delivery_id: d.id,
        subscription_id: d.subscription_id,
        event_id: d.event_id,
        event_type: d.event_type,
        attempt: d.attempts,
        outcome: result.outcome,
        status_code: result.statusCode || undefined,
        latency_ms: result.latencyMs,
      };
      if (success) this.o.logger.debug(fields, 'webhook delivered');
      else
        this.o.logger.info(
          { ...fields, error: result.error, detail: result.detail, retry_at: retryAt?.toISOString() ?? null },
          retryAt ? 'webhook attempt failed; retry scheduled' : 'webhook delivery failed for good',
        );
      if (disabled)
        this.o.logger.warn(
          { subscription_id: d.subscription_id },
          'webhook subscription disabled after a run of failures',
        );
    } catch (err) {
      // Not recorded: the lease ends and another attempt follows (same webhook-id).
      this.o.logger.warn({ err, delivery_id: d.id }, 'delivery outcome not recorded; it will be retried');
    }
  }
}

/**
 * The worker's poll as a service task: a wake every `everyMs`, returning at once, so that a run whose attempts hang
 * still looks at the queue at every poll (a task whose run lasted would skip its polls until it ended); stopped with
 * the service.
 */
export function deliveryPoll(worker: DeliveryWorker, everyMs: number): BackgroundTask {
  return {
    name: 'deliveries',
    everyMs,
    run: async () => worker.wake(),
    stop: () => worker.stop(),
  };
}
