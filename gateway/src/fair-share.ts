import type { Metrics } from '@mileage/runtime/telemetry';
import { HttpProblem } from './problems';

/**
 * Each organization's share of one gateway replica (CONTRACT §7, "Fair share"). A request costs units, about the CPU it
 * takes of the whole path in point reads (request-cost.ts: a SCIM list, its filter's scans and a large page cost more).
 * While another organization is active on the replica (it holds units, or was admitted within the last second), an
 * organization gets at most its share (`organizationShare`) of two things:
 * - **in flight**: the units its requests hold until answered, of `capacity`; and once the replica is full, only an
 *   organization holding less than an equal part of it (capacity ÷ the organizations holding units) gets in;
 * - **per second**: the units it spends, of `unitsPerSecond` (a token bucket per organization). Requests in flight alone
 *   do not bound CPU: one costly request after the other, each alone, keeps a core busy.
 * An organization alone on the replica is bounded by neither (an installation of one organization behaves as without
 * shares), but its spending is counted, so one that has just been flooding starts a contended second in debt.
 * Over a bound the request is refused at once — 429 with Retry-After — never queued: a queue would end in a deadline's
 * 504 for the one who waited. A request dearer than a whole share is counted as the share: it runs, alone.
 *
 * In memory, per replica: it bounds what this replica asks of the services behind it. The services bound each
 * organization's share of their database pools themselves.
 */
export interface FairShareOptions {
  /** Units a replica serves at once (GATEWAY_CAPACITY_UNITS). */
  capacity: number;
  /** Units a replica serves in a second (GATEWAY_CAPACITY_UNITS_PER_SECOND); unset: no bound per second. */
  unitsPerSecond?: number;
  /** The most one organization may take of either while others are active, a fraction (GATEWAY_ORGANIZATION_SHARE). */
  organizationShare: number;
  /** Seconds of its share per second an organization may spend at once (default BURST_SECONDS). */
  burstSeconds?: number;
  metrics?: Metrics;
  now?: () => number;
}

/** Why a request was refused: the metric's `reason` label. */
export type ShareRefusal = 'in_flight' | 'replica_full' | 'per_second';

/** Seconds a refused organization is told to wait at least: requests in flight end within a second or two. */
export const SHARE_RETRY_AFTER_SECONDS = 1;
/** How long after its last admitted request an organization still counts as active (its next request is coming). */
export const ACTIVE_WINDOW_MS = 1_000;
/**
 * A bucket holds this many seconds of its share: a person's large page and the clicks after it pass; a flood spends the
 * burst in its first seconds and the share after that.
 */
export const BURST_SECONDS = 4;

/** An organization's spending: a token bucket of units, refilled at its share per second, at most BURST_SECONDS of it. */
interface Spending {
  tokens: number;
  at: number;
}

export class OrganizationShares {
  /** Units each organization holds now; an organization holding none has no entry. */
  private readonly held = new Map<number, number>();
  private total = 0;
  /** The most units one organization may hold while others are active. */
  readonly perOrganization: number;
  /** The units one organization may spend a second while others are active. */
  readonly perSecond: number | undefined;
  private readonly spending = new Map<number, Spending>();
  private readonly burst: number | undefined;
  /** The two organizations admitted last (different ones) and when: who else was active lately, in O(1). */
  private latest: { organizationId: number; at: number } | undefined;
  private previous: { organizationId: number; at: number } | undefined;
  private readonly now: () => number;
  private readonly inFlight;
  private readonly spent;
  private readonly refusals;

  constructor(private readonly options: FairShareOptions) {
    if (!(options.capacity >= 1)) throw new Error('the capacity is at least one unit');
    if (!(options.organizationShare > 0 && options.organizationShare <= 1))
      throw new Error('an organization share is a fraction in (0, 1]');
    this.perOrganization = Math.max(1, Math.floor(options.capacity * options.organizationShare));
    this.perSecond =
      options.unitsPerSecond === undefined
        ? undefined
        : Math.max(1, Math.floor(options.unitsPerSecond * options.organizationShare));
    this.burst = this.perSecond === undefined ? undefined : this.perSecond * (options.burstSeconds ?? BURST_SECONDS);
    this.now = options.now ?? Date.now;
    this.inFlight = options.metrics?.gauge({
      name: 'gateway_organization_in_flight_units',
      help: "Cost units of an organization's requests in flight on this replica (labelled by organization id).",
      labelNames: ['organization'],
    });
    this.spent = options.metrics?.counter({
      name: 'gateway_organization_units_total',
      help: "Cost units of an organization's admitted requests on this replica: its rate is the units a second it spends.",
      labelNames: ['organization'],
    });
    this.refusals = options.metrics?.counter({
      name: 'gateway_organization_share_refusals_total',
      help: 'Requests refused with 429 because their organization was over its share of this replica while others were active.',
      labelNames: ['organization', 'reason'],
    });
  }

  /** Units held by an organization now (tests, the metric). */
  holding(organizationId: number): number {
    return this.held.get(organizationId) ?? 0;
  }

  /**
   * Admits a request of `cost` units for the organization, or refuses it (429). The returned function gives the units in
   * flight back (once, however often it is called).
   */
  admit(organizationId: number, cost: number): () => void {
    const now = this.now();
    const mine = this.holding(organizationId);
    const contended = this.othersActive(organizationId, mine, now);
    const units = Math.min(this.perOrganization, Math.max(1, Math.ceil(cost)));
    if (contended) {
      if (mine + units > this.perOrganization) throw this.refused(organizationId, 'in_flight');
      const equalPart = this.options.capacity / (this.held.size + (mine === 0 ? 1 : 0));
      if (this.total + units > this.options.capacity && mine + units > equalPart)
        throw this.refused(organizationId, 'replica_full');
    }
    // Spent at its whole price: capped like the units in flight, it would spend as little as a far cheaper request.
    this.spend(organizationId, Math.max(1, Math.ceil(cost)), contended, now);
    this.seen(organizationId, now);
    this.move(organizationId, units);
    this.spent?.inc({ organization: organizationId }, Math.max(1, Math.ceil(cost)));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.move(organizationId, -units);
    };
  }

  /** Whether another organization holds units on this replica or was admitted within ACTIVE_WINDOW_MS. */
  private othersActive(organizationId: number, mine: number, now: number): boolean {
    if (this.held.size > (mine > 0 ? 1 : 0)) return true;
    const other = this.latest?.organizationId === organizationId ? this.previous : this.latest;
    return other !== undefined && now - other.at < ACTIVE_WINDOW_MS;
  }

  private seen(organizationId: number, at: number): void {
    if (this.latest?.organizationId !== organizationId) this.previous = this.latest;
    this.latest = { organizationId, at };
  }

  /**
   * Charges the organization's bucket; refuses (while contended) a request when its bucket is empty. A request is
   * admitted while any units are left and charged its whole price, into debt (at most a second's share): a page dearer
   * than a second's share still runs, and the ones after it wait until the debt is paid.
   */
  private spend(organizationId: number, price: number, contended: boolean, now: number): void {
    const rate = this.perSecond;
    const burst = this.burst;
    if (rate === undefined || burst === undefined) return;
    const bucket = this.spending.get(organizationId) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    if (contended && bucket.tokens <= 0)
      throw this.refused(organizationId, 'per_second', Math.ceil(-bucket.tokens / rate));
    // Alone, spending is still counted, down to a second's debt: a flood that meets a neighbour waits that long.
    bucket.tokens = Math.max(-rate, bucket.tokens - price);
    // Re-inserted last: the organizations that spent longest ago are first to be forgotten.
    this.spending.delete(organizationId);
    this.spending.set(organizationId, bucket);
    if (this.spending.size > MAX_TRACKED_ORGANIZATIONS) {
      const oldest = this.spending.keys().next().value;
      if (oldest !== undefined) this.spending.delete(oldest);
    }
  }

  private refused(organizationId: number, reason: ShareRefusal, retryAfterSeconds = SHARE_RETRY_AFTER_SECONDS) {
    this.refusals?.inc({ organization: organizationId, reason });
    return new HttpProblem(429, 'Too much work of this organization at once on this replica; retry shortly', {
      'Retry-After': String(Math.max(SHARE_RETRY_AFTER_SECONDS, retryAfterSeconds)),
    });
  }

  private move(organizationId: number, units: number): void {
    const now = this.holding(organizationId) + units;
    if (now > 0) this.held.set(organizationId, now);
    else this.held.delete(organizationId);
    this.total += units;
    this.inFlight?.set({ organization: organizationId }, now);
  }
}

/** Buckets kept at most: a forgotten organization starts again with a full one. */
const MAX_TRACKED_ORGANIZATIONS = 100_000;
