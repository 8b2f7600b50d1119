import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from 'knex';
import {
  errors,
  ORGANIZATION_SHARE_EXHAUSTED,
  ORGANIZATION_SHARE_RETRY_AFTER_MS,
  QUERY_TOO_COSTLY,
  QUERY_TOO_COSTLY_RETRY_AFTER_MS,
  type AppError,
} from '../grpc/errors';
import type { Metrics } from '../telemetry/metrics';

/**
 * A fair share of a service's database pool per organization. Work inside one organization (inOrganization,
 * readInOrganization) first takes a place here: one organization holds at most `perOrganization` places, and all
 * organizations together at most `poolSize - reserved`, so the work across organizations (the account read of every
 * /v1 request, token resolution, outbox relays), which takes no place, always finds connections left. A request that
 * finds its organization's share, or the organizations' part of the pool, taken waits at most `waitMs`; a freed
 * place goes to the waiting organization that holds the fewest, so one organization's queue never delays another's
 * reads. Past the wait: RESOURCE_EXHAUSTED, reason ORGANIZATION_SHARE_EXHAUSTED, which every HTTP surface answers 429
 * with Retry-After (http-status.ts).
 */
export interface OrganizationShareOptions {
  /** The pool's size (DATABASE_POOL_MAX). */
  poolSize: number;
  /** Places one organization may hold (DATABASE_ORGANIZATION_MAX_CONNECTIONS). */
  perOrganization: number;
  /** Connections never given to work inside an organization (DATABASE_RESERVED_CONNECTIONS). */
  reserved: number;
  /** How long a request waits for a place before it is refused (DATABASE_ORGANIZATION_WAIT_MS). */
  waitMs: number;
  /** The pool's name in the metrics (the service's schema). */
  pool: string;
  metrics?: Metrics;
}

/** Defaults that fit a pool of `poolSize`: half of it per organization, a quarter kept back (each at least 1). */
export function defaultOrganizationShare(poolSize: number): { perOrganization: number; reserved: number } {
  const reserved = poolSize > 1 ? Math.max(1, Math.floor(poolSize / 4)) : 0;
  return { perOrganization: Math.max(1, Math.floor(poolSize / 2)), reserved };
}

interface Waiter {
  organizationId: number;
  grant: () => void;
  timer: NodeJS.Timeout;
}

/** Which (share, organization) places the current async context holds: nested work of the same one takes none. */
const holding = new AsyncLocalStorage<ReadonlySet<string>>();
let shareIds = 0;

export class OrganizationShare {
  readonly perOrganization: number;
  /** Places all organizations together may hold. */
  readonly capacity: number;
  private readonly held = new Map<number, number>();
  private total = 0;
  private readonly waiting: Waiter[] = [];
  private readonly id = `s${++shareIds}`;
  private readonly gauges;

  constructor(private readonly options: OrganizationShareOptions) {
    if (!(options.poolSize >= 1)) throw new Error('poolSize must be at least 1');
    if (!(options.reserved >= 0) || options.reserved >= options.poolSize)
      throw new Error(`reserved connections (${options.reserved}) must be fewer than the pool (${options.poolSize})`);
    this.capacity = options.poolSize - options.reserved;
    this.perOrganization = Math.min(Math.max(1, options.perOrganization), this.capacity);
    const m = options.metrics;
    // `organization` is the numeric id: one series per customer that used the pool, bounded by the customers.
    this.gauges = m && {
      inUse: m.gauge({
        name: 'db_organization_connections_in_use',
        help: "Places of a database pool's organization share held, by pool and organization id.",
        labelNames: ['pool', 'organization'] as const,
      }),
      limit: m.gauge({
        name: 'db_organization_connections_limit',
        help: 'Places one organization may hold of a database pool (its share), and all organizations together (scope).',
        labelNames: ['pool', 'scope'] as const,
      }),
      waits: m.counter({
        name: 'db_organization_waits_total',
        help: 'Database work of an organization that waited for a place of its share, by pool and organization id.',
        labelNames: ['pool', 'organization'] as const,
      }),
      refusals: m.counter({
        name: 'db_organization_refusals_total',
        help: 'Database work of an organization refused (429) after waiting for a place of its share, by pool and organization id.',
        labelNames: ['pool', 'organization'] as const,
      }),
      waitSeconds: m.histogram({
        name: 'db_organization_wait_seconds',
        help: 'How long database work waited for a place of its organization share (granted or refused), by pool.',
        labelNames: ['pool'] as const,
        buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      }),
    };
    this.gauges?.limit.set({ pool: options.pool, scope: 'organization' }, this.perOrganization);
    this.gauges?.limit.set({ pool: options.pool, scope: 'all_organizations' }, this.capacity);
  }

  /** Places `organizationId` holds now. */
  inUse(organizationId: number): number {
    return this.held.get(organizationId) ?? 0;
  }

  /** Requests waiting for a place now. */
  get waiters(): number {
    return this.waiting.length;
  }

  /** Runs `work` holding one place of `organizationId`'s share (none more when the caller already holds one). */
  async run<T>(organizationId: number, work: () => Promise<T>): Promise<T> {
    const key = `${this.id}:${organizationId}`;
    const held = holding.getStore();
    if (held?.has(key)) return work();
    await this.acquire(organizationId);
    try {
      return await holding.run(held ? new Set([...held, key]) : new Set([key]), work);
    } finally {
      this.release(organizationId);
    }
  }

  private eligible(organizationId: number): boolean {
    return this.total < this.capacity && this.inUse(organizationId) < this.perOrganization;
  }

  private take(organizationId: number): void {
    const n = this.inUse(organizationId) + 1;
    this.held.set(organizationId, n);
    this.total++;
    this.gauges?.inUse.set({ pool: this.options.pool, organization: String(organizationId) }, n);
  }

  private acquire(organizationId: number): Promise<void> {
    if (this.eligible(organizationId)) {
      this.take(organizationId);
      return Promise.resolve();
    }
    const labels = { pool: this.options.pool, organization: String(organizationId) };
    this.gauges?.waits.inc(labels);
    const started = performance.now();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        organizationId,
        grant: () => {
          clearTimeout(waiter.timer);
          this.gauges?.waitSeconds.observe({ pool: this.options.pool }, (performance.now() - started) / 1000);
          this.take(organizationId);
          resolve();
        },
        timer: setTimeout(() => {
          const at = this.waiting.indexOf(waiter);
          if (at >= 0) this.waiting.splice(at, 1);
          this.gauges?.refusals.inc(labels);
          this.gauges?.waitSeconds.observe({ pool: this.options.pool }, (performance.now() - started) / 1000);
          reject(organizationShareExhausted());
        }, this.options.waitMs),
      };
      this.waiting.push(waiter);
    });
  }

  private release(organizationId: number): void {
    const n = this.inUse(organizationId) - 1;
    if (n > 0) this.held.set(organizationId, n);
    else this.held.delete(organizationId);
    this.total--;
    this.gauges?.inUse.set({ pool: this.options.pool, organization: String(organizationId) }, n);
    this.grantWaiting(organizationId);
  }

  /**
   * The freed place goes to the eligible waiter whose organization holds the fewest, the releasing organization
   * counted with the place it gives back (so a flood does not take its own place straight back from a neighbour
   * holding as many); among equals, the oldest.
   */
  private grantWaiting(releasedBy: number): void {
    const weight = (organizationId: number) => this.inUse(organizationId) + (organizationId === releasedBy ? 1 : 0);
    while (this.total < this.capacity) {
      let best = -1;
      for (let i = 0; i < this.waiting.length; i++) {
        const w = this.waiting[i]!;
        if (!this.eligible(w.organizationId)) continue;
        if (best < 0 || weight(w.organizationId) < weight(this.waiting[best]!.organizationId)) best = i;
      }
      if (best < 0) return;
      this.waiting.splice(best, 1)[0]!.grant();
    }
  }
}

/** RESOURCE_EXHAUSTED, ORGANIZATION_SHARE_EXHAUSTED, with a RetryInfo: the 429 of an organization over its share. */
export function organizationShareExhausted(): AppError {
  const err = errors.resourceExhausted(
    "the organization is using its whole share of this service's database; try again shortly",
    ORGANIZATION_SHARE_EXHAUSTED,
  );
  err.details.retryAfterMs = ORGANIZATION_SHARE_RETRY_AFTER_MS;
  return err;
}

/** What a service's database allows work inside one organization: its share, and the costly reads' timeout. */
export interface OrganizationLimits {
  share?: OrganizationShare;
  /** statement_timeout of a costly read (readInOrganization with COSTLY_READ), in milliseconds. */
  costlyStatementTimeoutMs?: number;
  /** Told of each costly read cancelled at that timeout (a metric). */
  costlyCancelled?: (organizationId: string) => void;
}

const limitsOf = new WeakMap<Knex, OrganizationLimits>();

/** Gives `knex`'s work inside organizations these limits (createDatabase does, from the service's configuration). */
export function setOrganizationLimits(knex: Knex, limits: OrganizationLimits): void {
  limitsOf.set(knex, limits);
}

export function organizationLimits(knex: Knex): OrganizationLimits | undefined {
  return limitsOf.get(knex);
}

/** A costly read cancelled at its statement timeout: RESOURCE_EXHAUSTED, reason QUERY_TOO_COSTLY. */
export function queryTooCostly(timeoutMs: number): AppError {
  const err = errors.resourceExhausted(
    `the query ran longer than the ${timeoutMs} ms a list may take and was cancelled: ask for smaller pages or a narrower filter`,
    QUERY_TOO_COSTLY,
  );
  err.details.retryAfterMs = QUERY_TOO_COSTLY_RETRY_AFTER_MS;
  return err;
}
