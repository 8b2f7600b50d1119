/**
 * The nonces of the attestations this replica has taken, each until its attestation's window closes (after which the
 * window refuses it anyway): a nonce taken twice is a replay. Bounded: at `capacity` the oldest entry gives way, which
 * reopens a replay of that one nonce for the rest of its window, so `onEviction` reports it (a metric and a log). Per
 * replica by design: a write replayed to another replica is refused by its owner, which records each write's nonce
 * once; a read there is answered (docs/architecture.md, "The SCIM audit actor").
 *
 * O(1) per request (amortized): a Map keeps insertion order, which is nearly expiry order, so expired entries are
 * dropped from its front; one that a later-expiring entry holds back is still refused no longer than its expiry.
 */
export class ReplayCache {
  private readonly expiries = new Map<string, number>();

  constructor(
    private readonly capacity: number,
    private readonly onEviction: () => void,
  ) {}

  /** True the first time `nonce` is offered before `expiresAtMs`, false for a replay; records it. */
  firstUse(nonce: string, expiresAtMs: number, nowMs: number): boolean {
    for (const [oldest, expiry] of this.expiries) {
      if (expiry > nowMs) break;
      this.expiries.delete(oldest);
    }
    const seenUntil = this.expiries.get(nonce);
    if (seenUntil !== undefined && seenUntil > nowMs) return false;
    this.expiries.delete(nonce);
    if (this.expiries.size >= this.capacity) {
      this.expiries.delete(this.expiries.keys().next().value!);
      this.onEviction();
    }
    this.expiries.set(nonce, expiresAtMs);
    return true;
  }

  get size(): number {
    return this.expiries.size;
  }
}
