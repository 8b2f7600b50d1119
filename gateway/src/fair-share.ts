import type { Metrics } from '@mileage/runtime';
import { HttpProblem } from './problems';

/**
 * Each organization's share of one gateway replica (CONTRACT §7, "Fair share"). A request holds `cost` units while it
 * is served: 1 for a point read or a write, more for what makes the services and the database work harder (a SCIM
 * list, its filter's unindexed terms, a large page: request-cost.ts). An organization may hold at most
 * `organizationShare` of the replica's `capacity`; and once the replica is full, only an organization that holds less
 * than an equal part of it (capacity ÷ the organizations holding units) gets in. Over either bound the request is
 * refused at once — 429 with Retry-After — never queued: a queue would end in a deadline's 504 for the one who waited.
 *
 * In memory, per replica: it bounds what this replica's requests in flight ask of the services behind it. The
 * services bound each organization's share of their database pools themselves.
 */
export interface FairShareOptions {
  /** Units a replica serves at once (GATEWAY_CAPACITY_UNITS). */
  capacity: number;
  /** The most one organization may hold, as a fraction of `capacity` (GATEWAY_ORGANIZATION_SHARE). */
  organizationShare: number;
  metrics?: Metrics;
}

/** Why a request was refused: the metric's `reason` label. */
export type ShareRefusal = 'organization_share' | 'replica_full';

/** Seconds a refused organization is told to wait: requests in flight end within a second or two. */
export const SHARE_RETRY_AFTER_SECONDS = 1;

export class OrganizationShares {
  /** Units each organization holds now; an organization holding none has no entry. */
  private readonly held = new Map<number, number>();
  private total = 0;
  /** The most units one organization may hold. */
  readonly perOrganization: number;
  private readonly inFlight;
  private readonly refusals;

  constructor(private readonly options: FairShareOptions) {
    if (!(options.capacity >= 1)) throw new Error('the capacity is at least one unit');
    if (!(options.organizationShare > 0 && options.organizationShare <= 1))
      throw new Error('an organization share is a fraction in (0, 1]');
    this.perOrganization = Math.max(1, Math.floor(options.capacity * options.organizationShare));
    this.inFlight = options.metrics?.gauge({
      name: 'gateway_organization_in_flight_units',
      help: "Cost units of an organization's requests in flight on this replica (labelled by organization id).",
      labelNames: ['organization'],
    });
    this.refusals = options.metrics?.counter({
      name: 'gateway_organization_share_refusals_total',
      help: 'Requests refused with 429 because their organization held its share of this replica, or the replica was full.',
      labelNames: ['organization', 'reason'],
    });
  }

  /** Units held by an organization now (tests, the metric). */
  holding(organizationId: number): number {
    return this.held.get(organizationId) ?? 0;
  }

  /**
   * Admits a request of `cost` units for the organization, or refuses it (429). A cost above the organization's share is
   * counted as the whole share: the costliest request can still run, alone. The returned function gives the units back
   * (once, however often it is called).
   */
  admit(organizationId: number, cost: number): () => void {
    const units = Math.min(this.perOrganization, Math.max(1, Math.ceil(cost)));
    const mine = this.holding(organizationId);
    const refusal =
      mine + units > this.perOrganization
        ? 'organization_share'
        : this.total + units > this.options.capacity &&
            mine + units > this.options.capacity / (this.held.size + (mine === 0 ? 1 : 0))
          ? 'replica_full'
          : undefined;
    if (refusal) {
      this.refusals?.inc({ organization: organizationId, reason: refusal });
      throw new HttpProblem(429, 'Too many requests of this organization in flight; retry shortly', {
        'Retry-After': String(SHARE_RETRY_AFTER_SECONDS),
      });
    }
    this.move(organizationId, units);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.move(organizationId, -units);
    };
  }

  private move(organizationId: number, units: number): void {
    const now = this.holding(organizationId) + units;
    if (now > 0) this.held.set(organizationId, now);
    else this.held.delete(organizationId);
    this.total += units;
    this.inFlight?.set({ organization: organizationId }, now);
  }
}
